//! GC benchmark (prints numbers; asserts nothing): with 1,000,000 purged shares in the database,
//! the median time of an empty purge-candidate query with and without its two partial indexes, and the
//! landing page's latency under load with the after-response GC on and off, on both backends.
//!
//! Run: `cargo bench --bench gc` (release build). Settings: BENCH_ROWS (1000000),
//! BENCH_SECONDS (10), BENCH_CONNECTIONS (64).

#[path = "support/inprocess.rs"]
#[allow(dead_code)] // each bench uses part of it
mod inprocess;
#[path = "../tests/it/support/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "support/seed.rs"]
#[allow(dead_code)] // each bench uses part of it
mod seed;

use std::time::{Duration, Instant};

use inprocess::{Load, env_number, load, ms, start};
use watasu::{db::Db, lifecycle::LifecycleRepository};

#[tokio::main]
async fn main() {
    let rows = env_number("BENCH_ROWS", 1_000_000);
    let seconds = env_number("BENCH_SECONDS", 10);
    let connections = env_number("BENCH_CONNECTIONS", 64) as usize;
    let cluster = tokio::task::spawn_blocking(pg::PgCluster::start).await.unwrap();
    let mut table = vec![
        "| backend | purged rows | empty candidate query, median (no partial indexes) | (with partial indexes) | landing p50 / p99, GC off | landing p50 / p99, GC on | p99 ratio on/off | req/s off / on |".to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for backend in ["sqlite", "postgres"] {
        let dir = tempfile::tempdir().unwrap();
        let url = match backend {
            "sqlite" => format!("sqlite://{}?mode=rwc", dir.path().join("watasu.db").display()),
            _ => cluster.create_database().await,
        };
        let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        db.migrate().await.unwrap();
        let started = Instant::now();
        let token = seed::fill(&db, rows).await;
        eprintln!("{backend}: filled {rows} purged rows in {:.1?}", started.elapsed());

        let repo = LifecycleRepository::new(db.clone(), Duration::from_secs(900), Duration::from_secs(3600));
        let with_index = seed::median_query(&repo).await;
        seed::drop_index(&db, true).await;
        let without_index = seed::median_query(&repo).await;
        seed::drop_index(&db, false).await;

        let mut latencies = Vec::new();
        for access_time_gc in [false, true] {
            let app = start(&url, dir.path(), &["--access-time-gc", &access_time_gc.to_string()]).await;
            let path = format!("/s/{token}");
            latencies.push(load(&app.base, &path, connections, Load::For(Duration::from_secs(seconds))).await);
            let _ = app.stop.send(());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let (off, on) = (&latencies[0], &latencies[1]);
        table.push(format!(
            "| {backend} | {rows} | {:.3} ms | {:.3} ms | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {:.2} | {:.0} / {:.0} |",
            ms(without_index),
            ms(with_index),
            ms(off.p50),
            ms(off.p99),
            ms(on.p50),
            ms(on.p99),
            on.p99.as_secs_f64() / off.p99.as_secs_f64(),
            off.rps,
            on.rps,
        ));
        db.close().await;
    }
    println!("{}", table.join("\n"));
}
