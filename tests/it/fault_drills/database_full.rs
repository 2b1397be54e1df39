//! The database's disk full, for real: SQLite's file, or the PostgreSQL database's tablespace (the
//! cluster's WAL stays on its own disk, as PostgreSQL stops outright when the WAL cannot grow),
//! on a small tmpfs the test mounts and then fills. A write is answered 507 with the page that
//! says nothing was lost, changes nothing, is counted, and takes the instance out of rotation
//! (`/readyz` 503); once space is freed, `/readyz` is 200 again and the same request goes through.

use std::{io::Write, path::Path, time::Duration};

use watasu::secret::SecretString;

use super::{METRICS_TOKEN, PASSWORD, db_state, disk_full::SmallFileSystem, eventually, metric};
use crate::{
    both_backends,
    support::{Backend, TestApp, pg},
};

const SENDER: &str = "sato@example.test";

/// Writes zeros into `dir/filler` until the file system refuses one more byte.
fn fill(dir: &Path) {
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = [0u8; 4096];
    while filler.write_all(&block).is_ok() {}
    while filler.write_all(&[0]).is_ok() {}
}

/// A database URL whose data lives in `dir`. PostgreSQL: a cluster of this test's own, as the
/// tablespace's disk goes away at the end and a shared cluster would keep buffers for it.
async fn database_in(backend: Backend, dir: &Path) -> (String, Option<pg::PgCluster>) {
    match backend {
        Backend::Sqlite => (format!("sqlite://{}?mode=rwc", dir.join("watasu.db").display()), None),
        Backend::Postgres => {
            let cluster = tokio::task::spawn_blocking(pg::PgCluster::start).await.unwrap();
            (cluster.create_database_in(dir).await, Some(cluster))
        }
    }
}

/// SQLite appends every commit to its WAL and reuses the WAL's space after a checkpoint: with
/// the WAL emptied, the next commit needs new space, as on a disk that filled up over time.
async fn empty_sqlite_wal(app: &TestApp) {
    if let watasu::db::Db::Sqlite(pool) = app.db() {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.unwrap();
    }
}

async fn a_write_on_a_full_database_disk_is_refused_clearly_and_readiness_follows_the_free_space(backend: Backend) {
    let mount_dir = tempfile::tempdir().unwrap();
    let database = mount_dir.path().join("database");
    let mount = SmallFileSystem::mount(&database, "64m");
    let (url, cluster) = database_in(backend, &database).await;
    let app = TestApp::spawn_with(backend, |s| {
        s.database_url = Some(url);
        s.metrics_token = Some(SecretString::new(METRICS_TOKEN));
    })
    .await;
    app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    assert_eq!(app.browser().get("/readyz").await.status, 200);
    empty_sqlite_wal(&app).await;
    let before = db_state(app.db()).await;
    fill(&database);

    let browser = app.browser();
    let refused = browser.sign_in(SENDER, PASSWORD).await;

    assert_eq!(refused.status, 507, "{}", refused.body);
    let full = watasu::i18n::Lang::Ja.text().errors.database_full.title;
    assert_eq!(refused.texts("h1"), [full], "{}", refused.body);
    for leak in ["disk is full", "53100", "could not extend", "sqlx", "No space", "/tmp"] {
        assert!(!refused.body.contains(leak), "the page leaks {leak:?}: {}", refused.body);
    }
    assert_eq!(db_state(app.db()).await, before, "a refused write changed the database");
    assert_eq!(metric(&app, "watasu_database_full_total", &[]).await, Some(1.0));
    let ready = browser.get("/readyz").await;
    assert_eq!((ready.status.as_u16(), ready.body.as_str()), (503, "database full\n"));
    assert_eq!(browser.get("/readyz").await.status, 503, "still full, still out of rotation");

    // Space freed: back in rotation by itself, and the same sign-in goes through.
    std::fs::remove_file(database.join("filler")).unwrap();
    eventually(Duration::from_secs(60), "/readyz to answer ready", async || {
        let ready = browser.get("/readyz").await;
        (ready.status.as_u16(), ready.body.as_str()) == (200, "ready\n")
    })
    .await;
    let signed_in = browser.sign_in(SENDER, PASSWORD).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    assert_eq!(browser.get("/shares").await.status, 200);
    app.stop().await;
    if let Some(cluster) = cluster {
        tokio::task::block_in_place(|| cluster.pg_ctl_stop());
    }
    drop(mount);
}

both_backends!(a_write_on_a_full_database_disk_is_refused_clearly_and_readiness_follows_the_free_space);
