//! Migration 0035 (handovers own their files) on a database an older version filled: every share
//! keeps its file, its events and its delivered ranges; a waiting share is still downloaded with
//! its code, a delivered one is collected when its grace ends, a purged one stays a record; an
//! open deletion case gains the new step.

use std::{path::Path, time::Duration};

use watasu::{db::Db, on_db, secret::sha256_hex};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, TestShare, clock, fresh_database},
};

const CONTENT: &[u8] = "A contract sent before handovers existed. 契約書".as_bytes();

/// The schema as the version before handovers left it.
async fn migrate_to_0034(db: &Db) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(db.backend_name());
    let migrator = sqlx::migrate::Migrator::new(dir.as_path()).await.unwrap();
    on_db!(db, |pool| migrator.run_to(34, pool).await.unwrap());
}

async fn exec(db: &Db, sqlite: &'static str, postgres: &'static str, binds: &[&str]) {
    let sql = if matches!(db, Db::Sqlite(_)) { sqlite } else { postgres };
    on_db!(db, |pool| {
        let mut query = sqlx::query(sql);
        for value in binds {
            query = query.bind(*value);
        }
        query.execute(pool).await.unwrap();
    });
}

async fn texts(db: &Db, sql: &'static str) -> Vec<String> {
    on_db!(db, |pool| sqlx::query_scalar(sql).fetch_all(pool).await.unwrap())
}

/// Rows an older version wrote: a sender, three files and a share for each (waiting, delivered
/// two minutes ago, purged), their events and the delivered share's ranges.
async fn fill_0034(db: &Db, files_dir: &Path, waiting_token: &str) -> [String; 3] {
    let keys = ["waiting", "delivered", "purged"].map(sha256_hex);
    std::fs::create_dir_all(files_dir).unwrap();
    for key in &keys[..2] {
        std::fs::write(files_dir.join(key), CONTENT).unwrap();
    }
    exec(
        db,
        "INSERT INTO users (email, display_name, password_hash, role) VALUES ('old@example.test', 'Old Sender', 'x', 'sender')",
        "INSERT INTO users (email, display_name, password_hash, role) VALUES ('old@example.test', 'Old Sender', 'x', 'sender')",
        &[],
    )
    .await;
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(CONTENT));
    let crc32 = crc32fast::hash(CONTENT).to_string();
    for key in &keys {
        exec(
            db,
            "INSERT INTO files (owner_id, storage_key, original_name, content_type, size_bytes, sha256, crc32)
             VALUES (1, $1, '契約書.pdf', 'application/pdf', $2, $3, CAST($4 AS INTEGER))",
            "INSERT INTO files (owner_id, storage_key, original_name, content_type, size_bytes, sha256, crc32)
             VALUES (1, $1, '契約書.pdf', 'application/pdf', CAST($2 AS BIGINT), $3, CAST($4 AS BIGINT))",
            &[key, &CONTENT.len().to_string(), &sha256, &crc32],
        )
        .await;
    }
    exec(
        db,
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, lang, expires_at)
         VALUES (1, 1, $1, $2, 'en', unixepoch('subsec') + 86400)",
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, lang, expires_at)
         VALUES (1, 1, $1, $2, 'en', now() + interval '1 day')",
        &[&sha256_hex(waiting_token), RECIPIENT],
    )
    .await;
    exec(
        db,
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, status, expires_at, consumed_at,
                             delivery_started_at, delivered_at, delivered_bytes)
         VALUES (1, 2, $1, $2, 'consumed', unixepoch('subsec') + 86400, unixepoch('subsec') - 120,
                 unixepoch('subsec') - 120, unixepoch('subsec') - 110, CAST($3 AS INTEGER))",
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, status, expires_at, consumed_at,
                             delivery_started_at, delivered_at, delivered_bytes)
         VALUES (1, 2, $1, $2, 'consumed', now() + interval '1 day', now() - interval '120 seconds',
                 now() - interval '120 seconds', now() - interval '110 seconds', CAST($3 AS BIGINT))",
        &[&sha256_hex("delivered-token"), RECIPIENT, &CONTENT.len().to_string()],
    )
    .await;
    exec(
        db,
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, status, expires_at, consumed_at, purged_at)
         VALUES (1, 3, $1, $2, 'purged', unixepoch('subsec') - 86400, unixepoch('subsec') - 90000,
                 unixepoch('subsec') - 86000)",
        "INSERT INTO shares (sender_id, file_id, token_hash, recipient_email, status, expires_at, consumed_at, purged_at)
         VALUES (1, 3, $1, $2, 'purged', now() - interval '1 day', now() - interval '25 hours',
                 now() - interval '86000 seconds')",
        &[&sha256_hex("purged-token"), RECIPIENT],
    )
    .await;
    exec(
        db,
        "INSERT INTO share_events (share_id, kind) VALUES (1, 'opened'), (2, 'verified'), (2, 'downloaded'),
                                                          (3, 'downloaded'), (3, 'purged')",
        "INSERT INTO share_events (share_id, kind) VALUES (1, 'opened'), (2, 'verified'), (2, 'downloaded'),
                                                          (3, 'downloaded'), (3, 'purged')",
        &[],
    )
    .await;
    exec(
        db,
        "INSERT INTO delivered_ranges (share_id, first_byte, end_byte) VALUES (2, 0, 10), (2, 10, CAST($1 AS INTEGER))",
        "INSERT INTO delivered_ranges (share_id, first_byte, end_byte) VALUES (2, 0, 10), (2, 10, CAST($1 AS BIGINT))",
        &[&CONTENT.len().to_string()],
    )
    .await;
    // A second sender's deletion case, open with the steps of that version.
    exec(
        db,
        "INSERT INTO users (email, display_name, password_hash, role) VALUES ('leaving@example.test', 'Leaving', 'x', 'sender')",
        "INSERT INTO users (email, display_name, password_hash, role) VALUES ('leaving@example.test', 'Leaving', 'x', 'sender')",
        &[],
    )
    .await;
    exec(
        db,
        "INSERT INTO deletion_cases (reference, subject_id, subject_created_at, actor_role, state)
         SELECT 'case-before-handovers', id, created_at, 'operator', 'in_progress' FROM users WHERE id = 2",
        "INSERT INTO deletion_cases (reference, subject_id, subject_created_at, actor_role, state)
         SELECT 'case-before-handovers', id, created_at, 'operator', 'in_progress' FROM users WHERE id = 2",
        &[],
    )
    .await;
    for (position, store) in OLD_STEPS.iter().enumerate() {
        let action = if ["delivered_mail", "logs", "backups"].contains(store) { "retain" } else { "delete" };
        exec(
            db,
            "INSERT INTO deletion_steps (case_id, position, store, action) VALUES (1, CAST($1 AS INTEGER), $2, $3)",
            "INSERT INTO deletion_steps (case_id, position, store, action) VALUES (1, CAST($1 AS INTEGER), $2, $3)",
            &[&position.to_string(), store, action],
        )
        .await;
    }
    keys
}

/// The steps a deletion case had before handovers, in their order.
const OLD_STEPS: [&str; 15] = [
    "sessions",
    "invitations",
    "codes",
    "grants",
    "delivered_mail",
    "mail_outbox",
    "share_events",
    "rate_limits",
    "shares",
    "uploads",
    "stored_files",
    "file_records",
    "logs",
    "backups",
    "account",
];

const SHARES: &str = "SELECT CAST(id AS TEXT) || ' ' || status || ' ' || recipient_email FROM shares ORDER BY id";
const CHILDREN: &str = "SELECT 'event ' || CAST(share_id AS TEXT) || ' ' || kind FROM share_events
                         UNION ALL SELECT 'range ' || CAST(share_id AS TEXT) || ' ' || CAST(end_byte AS TEXT)
                           FROM delivered_ranges ORDER BY 1";

async fn shares_made_before_handovers_keep_working(backend: Backend) {
    let data_dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, data_dir.path()).await;
    let files_dir = data_dir.path().join("files");
    let token = &sha256_hex("a link made before handovers");
    let (shares, children, keys) = {
        let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        migrate_to_0034(&db).await;
        let keys = fill_0034(&db, &files_dir, token).await;
        let before = (texts(&db, SHARES).await, texts(&db, CHILDREN).await);
        db.close().await;
        (before.0, before.1, keys)
    };

    // Start-up migrates; nothing is lost and every share names a handover holding its one file.
    // The GC runs only when the test says (not after the download's response, racing its count).
    let app = TestApp::spawn_on(data_dir, &url, |s| {
        s.gc_interval = Duration::from_secs(24 * 3600);
        s.access_time_gc = false;
    })
    .await;
    let db = app.db();
    assert_eq!(texts(db, SHARES).await, shares);
    assert_eq!(texts(db, CHILDREN).await, children);
    assert_eq!(
        texts(
            db,
            "SELECT CAST(s.id AS TEXT) || ' ' || f.storage_key || ' ' || CAST(f.position AS TEXT)
                 || CASE WHEN f.purged_at IS NULL THEN ' live' ELSE ' purged' END
               FROM shares s JOIN handovers h ON h.id = s.handover_id AND h.sender_id = s.sender_id
               JOIN files f ON f.handover_id = h.id ORDER BY s.id"
        )
        .await,
        [format!("1 {} 0 live", keys[0]), format!("2 {} 0 live", keys[1]), format!("3 {} 0 purged", keys[2])],
    );
    // The open case gained the handovers step in its place and runs every step in today's order.
    let steps = texts(db, "SELECT store FROM deletion_steps WHERE case_id = 1 ORDER BY position").await;
    let order: Vec<&str> = watasu::deletion::Store::ORDER.iter().map(|s| s.code()).collect();
    assert_eq!(steps, order);
    if let Db::Sqlite(pool) = db {
        let broken: Vec<(String, i64)> =
            sqlx::query_as("PRAGMA foreign_key_check").fetch_all(pool).await.unwrap().into_iter().collect();
        assert!(broken.is_empty(), "{broken:?}");
    }

    // The waiting share is opened, verified and downloaded as before.
    let waiting = TestShare { id: 1, token: token.to_owned(), sender_id: 1 };
    let (browser, csrf) = app.verified_browser(&waiting).await;
    let download = browser.download(&waiting.token, &csrf).await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.bytes().await.unwrap().as_ref(), CONTENT);

    // The delivered share's file stays for its grace, then the GC takes it and marks the file.
    let files_dir = app.data_dir.path().join("files");
    assert!(files_dir.join(&keys[1]).exists(), "collected during the delivery grace");
    clock::set_ago(db, "shares", &["consumed_at", "delivery_started_at"], 16 * 60, "id = 2").await;
    let report = app.state.services.gc.gc().collect(5, watasu::maintenance::Trigger::Cli).await.unwrap();
    assert_eq!(report.purged, 1, "{report:?}");
    assert!(!files_dir.join(&keys[1]).exists());
    assert_eq!(
        texts(db, "SELECT CAST(id AS TEXT) FROM files WHERE purged_at IS NOT NULL ORDER BY id").await,
        ["2", "3"]
    );
}

both_backends!(shares_made_before_handovers_keep_working);
