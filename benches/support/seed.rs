//! Seeding and probing shared by the benchmarks: a database filled set-based with purged shares,
//! and the timing of the garbage collector's candidate query.

use std::time::{Duration, Instant};

use watasu::{db::Db, lifecycle::LifecycleRepository};

/// Inserts `rows` purged shares set-based, plus one live share; returns the live share's token.
pub async fn fill(db: &Db, rows: u64) -> String {
    let token = watasu::secret::random_token();
    let hash = watasu::secret::sha256_hex(token.expose());
    let rows = rows as i64;
    match db {
        Db::Sqlite(pool) => {
            for sql in [
                "INSERT INTO users (email, display_name, password_hash, role) VALUES ('bench@example.test', 'Bench', 'x', 'sender')",
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
                 INSERT INTO handovers (sender_id) SELECT 1 FROM n",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256, purged_at)
                 SELECT 1, id, printf('purged-%08d', id), 'f', 'application/octet-stream', 1, 'x', unixepoch('subsec') - 3600
                   FROM handovers",
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, purged_at)
                 SELECT handover_id, 1, 'purged-' || id, 'r@example.test', 'purged', unixepoch('subsec') - 86400,
                        unixepoch('subsec') - 3600 FROM files",
                "INSERT INTO handovers (sender_id) VALUES (1)",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
                 VALUES (1, (SELECT MAX(id) FROM handovers), 'live', 'live.txt', 'application/octet-stream', 1, 'x')",
                "ANALYZE",
            ] {
                sqlx::query(sql).bind(rows).execute(pool).await.unwrap();
            }
            sqlx::query(
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
                 SELECT handover_id, 1, $1, 'r@example.test', unixepoch('subsec') + 86400 FROM files WHERE storage_key = 'live'",
            )
            .bind(&hash)
            .execute(pool)
            .await
            .unwrap();
        }
        Db::Postgres(pool) => {
            for sql in [
                "INSERT INTO users (email, display_name, password_hash, role) VALUES ('bench@example.test', 'Bench', 'x', 'sender')",
                "INSERT INTO handovers (sender_id) SELECT 1 FROM generate_series(1, $1)",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256, purged_at)
                 SELECT 1, id, format('purged-%s', id), 'f', 'application/octet-stream', 1, 'x', now() - interval '1 hour'
                   FROM handovers",
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, status, expires_at, purged_at)
                 SELECT handover_id, 1, 'purged-' || id, 'r@example.test', 'purged', now() - interval '1 day',
                        now() - interval '1 hour' FROM files",
                "INSERT INTO handovers (sender_id) VALUES (1)",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
                 VALUES (1, (SELECT MAX(id) FROM handovers), 'live', 'live.txt', 'application/octet-stream', 1, 'x')",
            ] {
                sqlx::query(sql).bind(rows).execute(pool).await.unwrap();
            }
            sqlx::query(
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
                 SELECT handover_id, 1, $1, 'r@example.test', now() + interval '1 day' FROM files WHERE storage_key = 'live'",
            )
            .bind(&hash)
            .execute(pool)
            .await
            .unwrap();
            sqlx::query("VACUUM ANALYZE").execute(pool).await.unwrap();
        }
    }
    token.expose().to_owned()
}

/// Drops (`remove`) or creates again the GC's two candidate indexes (migration 0018).
pub async fn drop_index(db: &Db, remove: bool) {
    let statements: &[&'static str] = if remove {
        &["DROP INDEX shares_expiry_idx", "DROP INDEX shares_delivered_idx"]
    } else {
        &[
            "CREATE INDEX shares_expiry_idx ON shares (expires_at) WHERE status = 'active'",
            "CREATE INDEX shares_delivered_idx ON shares (consumed_at) WHERE status = 'consumed'",
        ]
    };
    for &statement in statements {
        match db {
            Db::Sqlite(pool) => sqlx::query(statement).execute(pool).await.map(drop).unwrap(),
            Db::Postgres(pool) => sqlx::query(statement).execute(pool).await.map(drop).unwrap(),
        }
    }
}

/// Median of 101 runs of the candidate query (which finds nothing: every row is purged).
pub async fn median_query(repo: &LifecycleRepository) -> Duration {
    let mut times = Vec::new();
    for _ in 0..101 {
        let started = Instant::now();
        let found = repo.select_purgeable(5).await.unwrap();
        times.push(started.elapsed());
        assert!(found.is_empty());
    }
    times.sort();
    times[times.len() / 2]
}

/// Inserts `count` more active shares of `sender_id`, set-based (their files are never read);
/// `tag` keeps their keys apart from earlier batches.
pub async fn add_active(db: &Db, sender_id: i64, count: u64, tag: &str) {
    let count = count as i64;
    let key = format!("active-{tag}-");
    match db {
        Db::Sqlite(pool) => {
            for sql in [
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
                 INSERT INTO handovers (sender_id) SELECT $2 FROM n",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
                 SELECT $2, h.id, $3 || h.id, 'f.txt', 'text/plain', 1, 'x' FROM handovers h
                  WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files) AND $1 > 0",
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
                 SELECT handover_id, $2, 'hash-' || storage_key, 'r@example.test', unixepoch('subsec') + 86400
                   FROM files WHERE storage_key LIKE $3 || '%' AND $1 > 0",
                "ANALYZE",
            ] {
                sqlx::query(sql).bind(count).bind(sender_id).bind(&key).execute(pool).await.unwrap();
            }
        }
        Db::Postgres(pool) => {
            for sql in [
                "INSERT INTO handovers (sender_id) SELECT $2 FROM generate_series(1, $1) WHERE $3::text IS NOT NULL",
                "INSERT INTO files (owner_id, handover_id, storage_key, original_name, content_type, size_bytes, sha256)
                 SELECT $2, h.id, $3 || h.id, 'f.txt', 'text/plain', 1, 'x' FROM handovers h
                  WHERE h.id > (SELECT COALESCE(MAX(handover_id), 0) FROM files) AND $1 > 0",
                "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, expires_at)
                 SELECT handover_id, $2, 'hash-' || storage_key, 'r@example.test', now() + interval '1 day'
                   FROM files WHERE storage_key LIKE $3 || '%' AND $1 > 0",
            ] {
                sqlx::query(sql).bind(count).bind(sender_id).bind(&key).execute(pool).await.unwrap();
            }
            sqlx::query("VACUUM ANALYZE").execute(pool).await.unwrap();
        }
    }
}

/// A sender account of its own; returns its id.
pub async fn add_sender(db: &Db, email: &str) -> i64 {
    let sql =
        "INSERT INTO users (email, display_name, password_hash, role) VALUES ($1, 'Bench', 'x', 'sender') RETURNING id";
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(email).fetch_one(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::query_scalar(sql).bind(email).fetch_one(pool).await.unwrap(),
    }
}
