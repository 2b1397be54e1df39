//! The one-time download lifecycle (seed 000): the claim, the self-healing GC with its backoff, the
//! real local store failing for real, two collectors racing, and the partial index that keeps an
//! empty pass cheap. The repository and the GC are built directly with the grace and backoff each
//! case needs; the app's own GC is kept out of the way (see `quiet_app`).

mod backoff_and_races;
mod claims_and_gc;
mod local_store;
mod shared_files;

use std::{path::PathBuf, sync::Arc, time::Duration};

use watasu::{
    db::{Db, Dialect, Sql},
    lifecycle::{GcReport, GcRunner, LifecycleRepository, RangeRows, ShareGc, Span},
    maintenance::Trigger,
    on_db,
    share::ShareEvents,
    sql,
};

use crate::{
    both_backends,
    support::{Backend, TestApp, count, execute, fake_store::FakeFileStore},
};

const NO_TIME: Duration = Duration::ZERO;
/// Seed 000's production-like values: 15 minutes of delivery grace, 60 minutes of first backoff.
const GRACE_15_MIN: Duration = Duration::from_secs(15 * 60);
const RETRY_60_MIN: Duration = Duration::from_secs(60 * 60);

fn report(purged: u32, failed: u32, skipped: u32) -> GcReport {
    GcReport { purged, failed, skipped, ..GcReport::default() }
}

/// An app whose own GC stays out of the tests: no access-time passes, the timer's next tick a day
/// away, and its start-up tick known to be over (it sweeps an old temp file planted beforehand).
pub(crate) async fn quiet_app(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await
}

/// A single text value from `sql` (in each dialect) with one integer parameter.
pub(crate) async fn text(db: &Db, sql: &'static str, bind: i64) -> String {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap())
}

async fn status(app: &TestApp, share_id: i64) -> String {
    text(app.db(), "SELECT status FROM shares WHERE id = $1", share_id).await
}

async fn storage_key(app: &TestApp, share_id: i64) -> String {
    text(
        app.db(),
        "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        share_id,
    )
    .await
}

async fn purge_attempts(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT CAST(purge_attempts AS BIGINT) FROM shares WHERE id = $1", share_id).await
}

async fn purged_events(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM share_events WHERE share_id = $1 AND kind = 'purged'", share_id).await
}

/// Seconds from the database's now until the share's next purge attempt.
async fn seconds_until_next_attempt(app: &TestApp, share_id: i64) -> f64 {
    const UNTIL: Sql = sql!(
        "SELECT "
        { sqlite: "next_purge_attempt_at - unixepoch('subsec')",
          postgres: "EXTRACT(EPOCH FROM next_purge_attempt_at - now())::float8" }
        " FROM shares WHERE id = $1"
    );
    on_db!(app.db(), |pool| sqlx::query_scalar(pool.sql(&UNTIL)).bind(share_id).fetch_one(pool).await.unwrap())
}

fn file_path(app: &TestApp, key: &str) -> PathBuf {
    app.data_dir.path().join("files").join(key)
}

/// Seed 000's test fixture: the app's database, a fake file store, and the default repository and
/// GC with neither delivery grace nor backoff, so the transitions themselves are what is seen.
struct Fixture {
    app: TestApp,
    sender: i64,
    files: Arc<FakeFileStore>,
    repo: LifecycleRepository,
    gc: ShareGc,
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let files = Arc::new(FakeFileStore::new());
        let repo = LifecycleRepository::new(app.db().clone(), NO_TIME, NO_TIME);
        let gc = ShareGc::new(repo.clone(), files.clone(), ShareEvents::new(app.db().clone()));
        Self { app, sender, files, repo, gc }
    }

    /// A GC over the fake store with its own delivery grace and first backoff.
    fn gc_with(&self, grace: Duration, retry_base: Duration) -> ShareGc {
        let repo = LifecycleRepository::new(self.app.db().clone(), grace, retry_base);
        ShareGc::new(repo, self.files.clone(), ShareEvents::new(self.app.db().clone()))
    }

    /// An active share valid for an hour; returns its id and its file's storage key.
    async fn share(&self) -> (i64, String) {
        let share = self.app.fake_share().sender(self.sender).file("report.txt", b"contents\n").create().await;
        (share.id, storage_key(&self.app, share.id).await)
    }

    /// Seed's `ttlMinutes: -1`: a share created and then expired.
    async fn expired_share(&self) -> (i64, String) {
        let (id, key) = self.share().await;
        self.app.expire_share(id).await;
        (id, key)
    }

    async fn status(&self, share_id: i64) -> String {
        status(&self.app, share_id).await
    }

    /// The claimed share's first byte goes out: its delivery grace starts now.
    async fn first_byte(&self, share_id: i64) {
        self.repo.record_sending(share_id, RangeRows::default(), FIRST_BYTE).await.unwrap();
    }
}

/// The first byte of a share's first file, as a response records it before it goes out.
const FIRST_BYTE: &[Span] = &[Span { position: 0, start: 0, end: 1 }];

// Seed 000's ShareLifecycleTest, case by case.

/// A GC over the app's real local store.
fn local_gc(app: &TestApp, grace: Duration, retry_base: Duration) -> ShareGc {
    let repo = LifecycleRepository::new(app.db().clone(), grace, retry_base);
    ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(app.db().clone()))
}

/// An active share of a real file on the local disk; returns its id and the file's path.
pub(crate) async fn local_share(app: &TestApp, sender: i64) -> (i64, PathBuf) {
    let share = app.fake_share().sender(sender).file("report.txt", b"real bytes\n").create().await;
    let path = file_path(app, &storage_key(app, share.id).await);
    assert!(path.is_file(), "the store put the file at {}", path.display());
    (share.id, path)
}

/// Replaces a stored file by a non-empty folder of the same name: unlink fails with EISDIR,
/// whoever runs it (root included).
fn make_undeletable(path: &PathBuf) {
    std::fs::remove_file(path).unwrap();
    std::fs::create_dir(path).unwrap();
    std::fs::write(path.join("inside"), b"x").unwrap();
}

// The real local store.

// The backoff formula: base × 2^min(attempts before the failure, 6).

/// Runs `collect(50)` until a pass finds nothing; returns the sum of the passes.
async fn drain(gc: ShareGc, start: Arc<tokio::sync::Barrier>) -> GcReport {
    start.wait().await;
    let mut total = GcReport::default();
    for _ in 0..1_000 {
        let pass = gc.collect(50, Trigger::Cli).await.unwrap();
        if pass.purged + pass.failed + pass.skipped == 0 {
            return total;
        }
        total.purged += pass.purged;
        total.failed += pass.failed;
        total.skipped += pass.skipped;
    }
    panic!("the collector never ran dry: {total:?}");
}

// Two collectors at once.
