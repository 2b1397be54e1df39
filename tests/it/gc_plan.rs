//! The GC's candidate query and the partial indexes that keep an empty pass cheap however many
//! shares are purged or live: the plan is that of the very statement the GC runs (exported by
//! the lifecycle module), not of a copy.

use std::time::Instant;

use sqlx::AssertSqlSafe;
use watasu::{
    db::{Db, Sql},
    lifecycle::{PURGEABLE_POSTGRES, PURGEABLE_SQLITE},
    on_db,
};

use crate::{
    both_backends,
    lifecycle::{local_share, quiet_app},
    support::{Backend, count, execute},
};

/// Seed 000's delivery grace, as the statement's first parameter.
const GRACE_SECONDS: f64 = 15.0 * 60.0;

// The partial indexes among many purged and live rows.
async fn the_purge_candidate_query_searches_its_two_indexes_among_100000_purged_and_20000_live_rows(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let started = Instant::now();
    // Each dialect makes rows, names them and counts time its own way (a recursive CTE, printf and
    // seconds; generate_series, format and intervals): these statements are written out for each.
    execute(
        app.db(),
        Sql {
            sqlite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
             INSERT INTO handovers (sender_id) SELECT $1 FROM n",
            postgres: "INSERT INTO handovers (sender_id) SELECT $1 FROM generate_series(1, 100000)",
        },
        sender,
    )
    .await;
    // One file per new handover: those after the last handover a file names.
    execute(
        app.db(),
        Sql {
            sqlite:
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             SELECT $1, h.id, printf('purged-%06d', h.id), 'old.txt', 'text/plain', 1, '' FROM handovers h
              WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files)",
            postgres:
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             SELECT $1, h.id, format('purged-%s', h.id), 'old.txt', 'text/plain', 1, '' FROM handovers h
              WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files)",
        },
        sender,
    )
    .await;
    execute(
        app.db(),
        Sql { sqlite: "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, consumed_at, purged_at)
             SELECT handover_id, $1, printf('purged-token-%d', id), 'old@example.test', 'purged',
                    unixepoch('subsec') - 86400, unixepoch('subsec') - 90000, unixepoch('subsec') - 80000
               FROM files WHERE storage_key LIKE 'purged-%'", postgres: "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, consumed_at, purged_at)
             SELECT handover_id, $1, format('purged-token-%s', id), 'old@example.test', 'purged',
                    now() - interval '1 day', now() - interval '25 hours', now() - interval '22 hours'
               FROM files WHERE storage_key LIKE 'purged-%'" },
        sender,
    )
    .await;
    // Live shares: half active until tomorrow, half consumed a minute ago (no byte sent yet: their
    // grace waits for the expiry).
    execute(
        app.db(),
        Sql {
            sqlite: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO handovers (sender_id) SELECT $1 FROM n",
            postgres: "INSERT INTO handovers (sender_id) SELECT $1 FROM generate_series(1, 20000)",
        },
        sender,
    )
    .await;
    // One file per new handover: those after the last handover a file names.
    execute(
        app.db(),
        Sql {
            sqlite:
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             SELECT $1, h.id, printf('live-%06d', h.id), 'new.txt', 'text/plain', 1, '' FROM handovers h
              WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files)",
            postgres:
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
             SELECT $1, h.id, format('live-%s', h.id), 'new.txt', 'text/plain', 1, '' FROM handovers h
              WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files)",
        },
        sender,
    )
    .await;
    execute(
        app.db(),
        Sql { sqlite: "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, consumed_at)
             SELECT handover_id, $1, printf('live-token-%d', id), 'new@example.test', CASE id % 2 WHEN 0 THEN 'active' ELSE 'consumed' END,
                    unixepoch('subsec') + 86400, CASE id % 2 WHEN 0 THEN NULL ELSE unixepoch('subsec') - 60 END
               FROM files WHERE storage_key LIKE 'live-%'", postgres: "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, consumed_at)
             SELECT handover_id, $1, format('live-token-%s', id), 'new@example.test', CASE id % 2 WHEN 0 THEN 'active' ELSE 'consumed' END,
                    now() + interval '1 day', CASE id % 2 WHEN 0 THEN NULL ELSE now() - interval '1 minute' END
               FROM files WHERE storage_key LIKE 'live-%'" },
        sender,
    )
    .await;
    let (live, _) = local_share(&app, sender).await;
    let (expired, _) = local_share(&app, sender).await;
    app.expire_share(expired).await;
    on_db!(app.db(), |pool| sqlx::query("ANALYZE").execute(pool).await.map(drop).unwrap());
    println!("[{backend:?}] 100000 purged and 20000 live rows inserted and analysed in {:?}", started.elapsed());
    assert!(count(app.db(), "SELECT count(*) FROM shares WHERE status = 'purged' AND id > $1", 0).await >= 100_000);
    let candidates = app.state.lifecycle.select_purgeable(5).await.unwrap();
    assert_eq!(candidates.iter().map(|c| c.id).collect::<Vec<_>>(), [expired], "live share {live} is not due");

    let plan = match app.db() {
        Db::Sqlite(pool) => {
            let rows: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(AssertSqlSafe(format!("EXPLAIN QUERY PLAN {PURGEABLE_SQLITE}")))
                    .bind(GRACE_SECONDS)
                    .bind(5_i64)
                    .fetch_all(pool)
                    .await
                    .unwrap();
            rows.into_iter().map(|(_, _, _, detail)| detail).collect::<Vec<_>>().join("\n")
        }
        Db::Postgres(pool) => {
            // A generic plan: the one a prepared statement with parameters may use.
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("SET LOCAL plan_cache_mode = force_generic_plan").execute(&mut *tx).await.unwrap();
            let rows: Vec<String> =
                sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN (FORMAT TEXT) {PURGEABLE_POSTGRES}")))
                    .bind(GRACE_SECONDS)
                    .bind(5_i64)
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
            rows.join("\n")
        }
    };

    println!("[{backend:?}] plan of the purge-candidate query:\n{plan}");
    for index in ["shares_expiry_idx", "shares_delivering_idx"] {
        assert!(plan.contains(index), "{index} is not used:\n{plan}");
    }
    // A range search on each index, never a walk through one or through the table.
    assert!(!plan.contains("Seq Scan on shares") && !plan.contains("SCAN s "), "shares are scanned whole:\n{plan}");
    assert!(
        plan.contains("expires_at<?") || plan.contains("Index Cond: (expires_at <="),
        "the expiry index is walked, not searched:\n{plan}"
    );
    assert!(
        plan.contains("shares_delivering_idx (<expr><?)") || plan.contains("Index Cond: (COALESCE("),
        "the delivering index is walked, not searched:\n{plan}"
    );
}

both_backends!(the_purge_candidate_query_searches_its_two_indexes_among_100000_purged_and_20000_live_rows);
