//! Migrations 0030, 0035 and 0038 were edited after they shipped: a database that ran their first
//! texts starts (it would fail sqlx's checksum check), gains what the edits added, and then holds
//! the same schema and checksums as a database migrated from scratch, also when two instances
//! start at once on PostgreSQL.

use std::{path::Path, time::Duration};

use watasu::{db::Db, on_db};

use crate::{
    both_backends,
    support::{Backend, fresh_database},
};

/// The checksums (SHA-384, as sqlx stores them) of the three first texts, from the repository's
/// history (`git show b5abd59:…0030…`, `d6169b9:…0035…`, `418a680:…0038…` | sha384sum).
fn first_checksums(db: &Db) -> [(i64, &'static str); 3] {
    match db {
        Db::Sqlite(_) => [
            (30, "4cb20ace2cc6d4563f58e46348d5ed00a45777de312a1b42d64f685e33cd3d7aa5cbbea6163bd565a97a32a3336c8c7d"),
            (35, "085992293a53a8ad4e5bfd1563a6b7a8c9c0ca8516e91da790087f94ac751a9d7bdd32992d01fcc182a8fad2603961b0"),
            (38, "9a970fa67b7cd5a01f0fcb34ab4845ab169a8a4bcc8a46164aa637bb01dc3ff5d0de02ae07bc5d3f58b57ab64ece81fb"),
        ],
        Db::Postgres(_) => [
            (30, "01daf3b94515b4b35b96dabc16383b68d9a717e1cd04c5d7e78d132abaffa52a760f3c6370965d6909a70883a4dbb23f"),
            (35, "b66b15166970c8a54400abd1a8c0c26042d294710e945f58ce5775207457a880e3c888b57a006172de02753d68ce5f80"),
            (38, "c383fe319e70ce9c7bfe8b9acad132fc6173b55b94f2b9961f14f7427040a44b76e43be27bf8aa9af2b71ed0e94c776f"),
        ],
    }
}

async fn checksums(db: &Db) -> Vec<(i64, String)> {
    let rows: Vec<(i64, Vec<u8>)> =
        on_db!(db, |pool| sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
            .fetch_all(pool)
            .await
            .unwrap());
    rows.into_iter().map(|(version, sum)| (version, hex::encode(sum))).collect()
}

async fn has_scan_told_at(db: &Db) -> bool {
    let sql = match db {
        Db::Sqlite(_) => "SELECT count(*) FROM pragma_table_info('files') WHERE name = 'scan_told_at'",
        Db::Postgres(_) => {
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'files' AND column_name = 'scan_told_at'"
        }
    };
    let found: i64 = on_db!(db, |pool| sqlx::query_scalar(sql).fetch_one(pool).await.unwrap());
    found == 1
}

async fn a_database_that_ran_the_first_texts_of_edited_migrations_starts_and_catches_up(backend: Backend) {
    let data_dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, data_dir.path()).await;
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    // The schema up to 0038 as its first texts left it: no scan_told_at, their checksums stored.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(db.backend_name());
    let migrator = sqlx::migrate::Migrator::new(dir.as_path()).await.unwrap();
    on_db!(&db, |pool| migrator.run_to(38, pool).await.unwrap());
    on_db!(&db, |pool| sqlx::query("ALTER TABLE files DROP COLUMN scan_told_at")
        .execute(pool)
        .await
        .unwrap()
        .rows_affected());
    for (version, sum) in first_checksums(&db) {
        on_db!(&db, |pool| sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2")
            .bind(hex::decode(sum).unwrap())
            .bind(version)
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
    }
    // sqlx alone refuses such a database: the stored checksums are not the embedded ones. (On a
    // pool of its own, closed after: the refused run leaves PostgreSQL's migration lock held by
    // its connection.)
    let alone = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    let refused = on_db!(&alone, |pool| migrator.run(pool).await);
    assert!(refused.is_err(), "sqlx accepted the first texts' checksums");
    alone.close().await;

    if backend == Backend::Postgres {
        // Two instances start at once: both come up, and the added statements ran once. (SQLite
        // serves one instance: sqlx takes no lock there, and two would run every later migration.)
        let other = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        let (first, second) = tokio::join!(db.migrate(), other.migrate());
        first.expect("the catch-up lets the database start");
        second.expect("an instance starting at the same time starts too");
    } else {
        db.migrate().await.expect("the catch-up lets the database start");
    }

    assert!(has_scan_told_at(&db).await, "0038's added column is there");
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Db::connect(&fresh_database(backend, fresh_dir.path()).await, Duration::from_secs(10)).await.unwrap();
    fresh.migrate().await.unwrap();
    assert_eq!(checksums(&db).await, checksums(&fresh).await, "the same checksums as a fresh database");
    // Starting again changes nothing more.
    db.migrate().await.unwrap();
    assert_eq!(checksums(&db).await, checksums(&fresh).await);
}

both_backends!(a_database_that_ran_the_first_texts_of_edited_migrations_starts_and_catches_up);
