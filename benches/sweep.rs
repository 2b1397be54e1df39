//! Session-sweep benchmark (prints numbers; asserts nothing): 1,000,000 expired sessions are
//! swept in the production batch size and pacing while the share landing page is under load; prints the
//! sweep's total time, its longest and median batch, and the page's p50/p99 before and during
//! the sweep, on both backends.
//!
//! Run: `cargo bench --bench sweep` (release build). Settings: BENCH_ROWS (1000000),
//! BENCH_SECONDS (10, the "before" window), BENCH_CONNECTIONS (64).

#[path = "support/inprocess.rs"]
mod inprocess;
#[path = "../tests/it/support/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use inprocess::{Load, env_number, load, ms, start};
use watasu::{
    db::Db,
    maintenance::{Budget, Kind, Trigger},
};

#[tokio::main]
async fn main() {
    let rows = env_number("BENCH_ROWS", 1_000_000);
    let seconds = env_number("BENCH_SECONDS", 10);
    let connections = env_number("BENCH_CONNECTIONS", 64) as usize;
    let batch_size = Budget::default().batch_size;
    let cluster = tokio::task::spawn_blocking(pg::PgCluster::start).await.unwrap();
    let mut table = vec![
        format!(
            "| backend | expired sessions | sweep total | batches of {batch_size} | longest batch | median batch | landing p50 / p99 before | landing p50 / p99 during | p99 during/before | req/s before / during |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for backend in ["sqlite", "postgres"] {
        let dir = tempfile::tempdir().unwrap();
        let url = match backend {
            "sqlite" => format!("sqlite://{}?mode=rwc", dir.path().join("watasu.db").display()),
            _ => cluster.create_database().await,
        };
        let app = start(&url, dir.path(), &[]).await;
        let (base, state) = (app.base.clone(), app.state.clone());
        // The app's start-up sweep has run on an empty database; now the backlog arrives.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let db = state.services.parts().db.clone();
        let token = fill(&db, rows).await;
        let path = format!("/s/{token}");

        let before = load(&base, &path, connections, Load::For(Duration::from_secs(seconds))).await;

        let done = Arc::new(tokio::sync::Notify::new());
        let during = tokio::spawn({
            let (base, path, done) = (base.clone(), path.clone(), done.clone());
            async move { load(&base, &path, connections, Load::Until(done)).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        let m = state.services.maintenance.clone();
        let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "bench").await.unwrap();
        let cutoff = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
        let sweep = m.sweep(Kind::Sessions);
        let mut walk = sweep.start(db.clone(), run.id, cutoff);
        let sweep_started = Instant::now();
        let mut batches = Vec::new();
        loop {
            let started = Instant::now();
            let ids = walk.scan(batch_size).await.unwrap();
            if ids.is_empty() {
                break;
            }
            walk.apply(&ids).await.unwrap();
            let took = started.elapsed();
            batches.push(took);
            // The runner's pacing between batches.
            tokio::time::sleep(Budget::pause_after(took)).await;
        }
        let total = sweep_started.elapsed();
        done.notify_one();
        let during = during.await.unwrap();
        let _ = app.stop.send(());
        batches.sort();
        table.push(format!(
            "| {backend} | {rows} | {:.1} s | {} | {:.1} ms | {:.1} ms | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {:.2} | {:.0} / {:.0} |",
            total.as_secs_f64(),
            batches.len(),
            ms(*batches.last().unwrap()),
            ms(batches[batches.len() / 2]),
            ms(before.p50),
            ms(before.p99),
            ms(during.p50),
            ms(during.p99),
            during.p99.as_secs_f64() / before.p99.as_secs_f64(),
            before.rps,
            during.rps,
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        db.close().await;
    }
    println!("{}", table.join("\n"));
}

/// Inserts `rows` expired sessions set-based, plus one live share; returns the share's token.
async fn fill(db: &Db, rows: u64) -> String {
    let token = watasu::secret::random_token();
    let hash = watasu::secret::sha256_hex(token.expose());
    let rows = rows as i64;
    let started = Instant::now();
    let statements: [&'static str; 5] = match db {
        Db::Sqlite(_) => [
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
             INSERT INTO sessions (id_hash, csrf_secret, expires_at, last_seen_at)
             SELECT printf('bench-%08d', i), 'x', unixepoch('subsec') - 60, unixepoch('subsec') - 120 FROM n",
            "INSERT INTO users (email, display_name, password_hash, role) VALUES ('bench@example.test', 'Bench', 'x', 'sender')",
            "INSERT INTO handovers (sender_id) SELECT max(id) FROM users",
            "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             VALUES ((SELECT max(id) FROM users), (SELECT max(id) FROM handovers), 'live', 'live.txt',
                     'application/octet-stream', 1, 'x')",
            "ANALYZE",
        ],
        Db::Postgres(_) => [
            "INSERT INTO sessions (id_hash, csrf_secret, expires_at, last_seen_at)
             SELECT format('bench-%s', i), 'x', now() - interval '1 minute', now() - interval '2 minutes'
               FROM generate_series(1, $1) i",
            "INSERT INTO users (email, display_name, password_hash, role) VALUES ('bench@example.test', 'Bench', 'x', 'sender')",
            "INSERT INTO handovers (sender_id) SELECT max(id) FROM users",
            "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             VALUES ((SELECT max(id) FROM users), (SELECT max(id) FROM handovers), 'live', 'live.txt',
                     'application/octet-stream', 1, 'x')",
            "ANALYZE",
        ],
    };
    let live_share = match db {
        Db::Sqlite(_) => {
            "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
             SELECT handover_id, owner_id, $1, 'r@example.test', unixepoch('subsec') + 86400 FROM files WHERE storage_key = 'live'"
        }
        Db::Postgres(_) => {
            "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
             SELECT handover_id, owner_id, $1, 'r@example.test', now() + interval '1 day' FROM files WHERE storage_key = 'live'"
        }
    };
    for (i, sql) in statements.into_iter().enumerate() {
        match db {
            Db::Sqlite(pool) if i == 0 => sqlx::query(sql).bind(rows).execute(pool).await.map(drop),
            Db::Postgres(pool) if i == 0 => sqlx::query(sql).bind(rows).execute(pool).await.map(drop),
            Db::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
            Db::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        }
        .unwrap();
    }
    match db {
        Db::Sqlite(pool) => sqlx::query(live_share).bind(&hash).execute(pool).await.map(drop),
        Db::Postgres(pool) => sqlx::query(live_share).bind(&hash).execute(pool).await.map(drop),
    }
    .unwrap();
    eprintln!("{}: {rows} expired sessions inserted in {:.1?}", db.backend_name(), started.elapsed());
    token.expose().to_owned()
}
