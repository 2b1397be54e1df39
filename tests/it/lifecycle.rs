//! The one-time download lifecycle (seed 000): the claim, the self-healing GC with its backoff, the
//! real local store failing for real, two collectors racing, and the partial index that keeps an
//! empty pass cheap. The repository and the GC are built directly with the grace and backoff each
//! case needs; the app's own GC is kept out of the way (see `quiet_app`).

use std::{path::PathBuf, sync::Arc, time::Duration};

use watasu::{
    db::Db,
    lifecycle::{GcReport, GcRunner, LifecycleRepository, ShareGc},
    maintenance::Trigger,
    share::ShareEvents,
};

use crate::{
    both_backends,
    support::{Backend, TestApp, count, execute, fake_store::FakeFileStore},
};

const HOUR: Duration = Duration::from_secs(3600);
const NO_TIME: Duration = Duration::ZERO;
/// Seed 000's production-like values: 15 minutes of delivery grace, 60 minutes of first backoff.
const GRACE_15_MIN: Duration = Duration::from_secs(15 * 60);
const RETRY_60_MIN: Duration = Duration::from_secs(60 * 60);

fn report(purged: u32, failed: u32, skipped: u32) -> GcReport {
    GcReport { purged, failed, skipped }
}

/// An app whose own GC stays out of the tests: no access-time passes, the timer's next tick a day
/// away, and its start-up tick known to be over (it sweeps an old temp file planted beforehand).
pub(crate) async fn quiet_app(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await
}

/// A single text value from `sql` (in each dialect) with one integer parameter.
async fn text(db: &Db, sql: &'static str, bind: i64) -> String {
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
    }
}

async fn status(app: &TestApp, share_id: i64) -> String {
    text(app.db(), "SELECT status FROM shares WHERE id = $1", share_id).await
}

async fn storage_key(app: &TestApp, share_id: i64) -> String {
    text(app.db(), "SELECT f.storage_key FROM shares s JOIN files f ON f.id = s.file_id WHERE s.id = $1", share_id)
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
    match app.db() {
        Db::Sqlite(pool) => {
            sqlx::query_scalar("SELECT next_purge_attempt_at - unixepoch('subsec') FROM shares WHERE id = $1")
                .bind(share_id)
                .fetch_one(pool)
                .await
                .unwrap()
        }
        Db::Postgres(pool) => sqlx::query_scalar(
            "SELECT EXTRACT(EPOCH FROM next_purge_attempt_at - now())::float8 FROM shares WHERE id = $1",
        )
        .bind(share_id)
        .fetch_one(pool)
        .await
        .unwrap(),
    }
}

/// The share's expiry one minute ago, its claim untouched.
async fn expired_a_minute_ago(app: &TestApp, share_id: i64) {
    execute(
        app.db(),
        "UPDATE shares SET expires_at = unixepoch('subsec') - 60 WHERE id = $1",
        "UPDATE shares SET expires_at = now() - interval '1 minute' WHERE id = $1",
        share_id,
    )
    .await;
}

async fn consumed_16_minutes_ago(app: &TestApp, share_id: i64) {
    execute(
        app.db(),
        "UPDATE shares SET consumed_at = unixepoch('subsec') - 16 * 60 WHERE id = $1",
        "UPDATE shares SET consumed_at = now() - interval '16 minutes' WHERE id = $1",
        share_id,
    )
    .await;
}

/// Ends the backoff of a share whose delete failed.
async fn backoff_elapsed(app: &TestApp, share_id: i64) {
    execute(
        app.db(),
        "UPDATE shares SET next_purge_attempt_at = unixepoch('subsec') - 60 WHERE id = $1",
        "UPDATE shares SET next_purge_attempt_at = now() - interval '1 minute' WHERE id = $1",
        share_id,
    )
    .await;
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
        let share =
            self.app.create_share_with(self.sender, "recipient@example.test", "report.txt", b"contents\n", HOUR).await;
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
}

// Seed 000's ShareLifecycleTest, case by case.
both_backends! {
    async fn the_first_download_is_claimed_and_the_second_is_refused(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, _) = f.share().await;

        let first = f.repo.mark_consumed(id).await.unwrap();
        let second = f.repo.mark_consumed(id).await.unwrap();

        assert!(first, "the first claim must win");
        assert!(!second, "the second claim must be refused");
        assert_eq!(f.status(id).await, "consumed");
    }

    async fn an_expired_share_cannot_be_claimed_and_stays_active(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, _) = f.expired_share().await;

        let claimed = f.repo.mark_consumed(id).await.unwrap();

        assert!(!claimed);
        assert_eq!(f.status(id).await, "active");
    }

    async fn the_gc_purges_a_consumed_share(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);
        assert!(f.repo.mark_consumed(id).await.unwrap());

        let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
        assert_eq!(purged_events(&f.app, id).await, 1);
    }

    async fn the_gc_purges_an_expired_share_that_was_never_downloaded(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.expired_share().await;
        f.files.place(&key);

        let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn the_gc_leaves_an_active_unexpired_share_untouched(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);

        let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(0, 0, 0));
        assert!(f.files.exists(&key));
        assert_eq!(f.status(id).await, "active");
    }

    async fn a_consumed_share_is_protected_during_the_delivery_grace_then_purged(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);
        assert!(f.repo.mark_consumed(id).await.unwrap());

        let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(with_grace, report(0, 0, 0), "a file being delivered must not be collected");
        assert!(f.files.exists(&key));
        assert_eq!(f.status(id).await, "consumed");

        let after_grace = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(after_grace, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn a_consumed_share_near_expiry_is_not_purged_by_the_expiry_branch_during_the_grace(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);
        assert!(f.repo.mark_consumed(id).await.unwrap());
        expired_a_minute_ago(&f.app, id).await;
        let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME);

        let during_grace = with_grace.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(during_grace, report(0, 0, 0), "the expiry branch must not bypass the delivery grace");
        assert!(f.files.exists(&key));
        assert_eq!(f.status(id).await, "consumed");

        consumed_16_minutes_ago(&f.app, id).await;
        let after_grace = with_grace.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(after_grace, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn the_gc_heals_itself_when_a_delete_fails(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);
        f.files.fail_on(&key);
        assert!(f.repo.mark_consumed(id).await.unwrap());

        let failing = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(failing, report(0, 1, 0));
        assert_eq!(f.status(id).await, "consumed", "a file still there must not be marked purged");
        assert!(f.files.exists(&key));
        assert_eq!(purge_attempts(&f.app, id).await, 1);
        assert_eq!(purged_events(&f.app, id).await, 0);

        f.files.clear_failure(&key);
        let healed = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(healed, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn failing_rows_do_not_block_the_rows_after_them(backend: Backend) {
        let f = Fixture::new(backend).await;
        let mut shares = Vec::new();
        for n in 1..=8 {
            let (id, key) = f.expired_share().await;
            f.files.place(&key);
            if n <= 5 {
                f.files.fail_on(&key);
            }
            shares.push((id, key));
        }
        let runner = GcRunner::new(f.gc_with(NO_TIME, RETRY_60_MIN), 5);

        let first = runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap();
        let second = runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap();

        assert_eq!(first, report(0, 5, 0), "the first pass takes the five failing rows");
        assert_eq!(second, report(3, 0, 0), "backed-off rows must let the pass reach the healthy ones");
        for (id, key) in &shares[..5] {
            assert_eq!(f.status(*id).await, "active");
            assert!(f.files.exists(key));
            assert_eq!(purge_attempts(&f.app, *id).await, 1);
        }
        for (id, key) in &shares[5..] {
            assert_eq!(f.status(*id).await, "purged");
            assert!(!f.files.exists(key));
        }
    }

    async fn a_failed_purge_is_retried_once_the_backoff_has_elapsed(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.expired_share().await;
        f.files.place(&key);
        f.files.fail_on(&key);
        let with_backoff = f.gc_with(NO_TIME, RETRY_60_MIN);

        let failing = with_backoff.collect(10, Trigger::Cli).await.unwrap();
        f.files.clear_failure(&key);
        let backing_off = with_backoff.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(failing, report(0, 1, 0));
        assert_eq!(backing_off, report(0, 0, 0), "a row backing off must not be picked up");
        assert_eq!(f.status(id).await, "active");
        assert!(f.files.exists(&key));

        backoff_elapsed(&f.app, id).await;
        let retried = with_backoff.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(retried, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn the_gc_advances_when_the_file_was_already_absent(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await; // never placed: a crash after the delete, say
        assert!(f.repo.mark_consumed(id).await.unwrap());

        let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(1, 0, 0));
        assert!(!f.files.exists(&key));
        assert_eq!(f.status(id).await, "purged");
    }

    async fn an_active_share_cannot_be_purged_directly(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, _) = f.share().await;

        let purged = f.repo.mark_purged(id).await.unwrap();

        assert!(!purged, "an active, unexpired share must never be marked purged");
        assert_eq!(f.status(id).await, "active");
    }

    async fn a_purged_share_is_forward_only(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.share().await;
        f.files.place(&key);
        assert!(f.repo.mark_consumed(id).await.unwrap());
        assert_eq!(f.gc.collect(10, Trigger::Cli).await.unwrap(), report(1, 0, 0));

        let again = f.gc.collect(10, Trigger::Cli).await.unwrap();
        let purged_twice = f.repo.mark_purged(id).await.unwrap();
        let claimed_after = f.repo.mark_consumed(id).await.unwrap();

        assert_eq!(again, report(0, 0, 0));
        assert!(!purged_twice);
        assert!(!claimed_after);
        assert_eq!(f.status(id).await, "purged");
        assert_eq!(purged_events(&f.app, id).await, 1);

        // Still forward only once its expiry has passed too (the expiry branch of mark_purged).
        f.app.expire_share(id).await;
        assert!(!f.repo.mark_purged(id).await.unwrap(), "a purged, expired share was purged again");
        assert_eq!(f.gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0));
        assert_eq!(purged_events(&f.app, id).await, 1);
    }

    async fn the_access_time_gc_is_bounded(backend: Backend) {
        let f = Fixture::new(backend).await;
        for _ in 0..8 {
            let (_, key) = f.expired_share().await;
            f.files.place(&key);
        }
        let runner = GcRunner::new(f.gc.clone(), 5);

        let mut passes = Vec::new();
        for _ in 0..3 {
            passes.push(runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap());
        }

        assert_eq!(passes, [report(5, 0, 0), report(3, 0, 0), report(0, 0, 0)]);
        assert_eq!(count(f.app.db(), "SELECT count(*) FROM shares WHERE status = 'purged' AND id > $1", 0).await, 8);
    }
}

/// A GC over the app's real local store.
fn local_gc(app: &TestApp, grace: Duration, retry_base: Duration) -> ShareGc {
    let repo = LifecycleRepository::new(app.db().clone(), grace, retry_base);
    ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(app.db().clone()))
}

/// An active share of a real file on the local disk; returns its id and the file's path.
pub(crate) async fn local_share(app: &TestApp, sender: i64) -> (i64, PathBuf) {
    let share = app.create_share_with(sender, "recipient@example.test", "report.txt", b"real bytes\n", HOUR).await;
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
both_backends! {
    async fn the_local_store_deletes_the_file_from_disk_and_the_share_is_purged(backend: Backend) {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let (id, path) = local_share(&app, sender).await;
        assert!(app.state.lifecycle.mark_consumed(id).await.unwrap());

        let done = local_gc(&app, NO_TIME, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(1, 0, 0));
        assert!(!path.exists(), "the file must be gone from disk");
        assert_eq!(status(&app, id).await, "purged");
        assert_eq!(purged_events(&app, id).await, 1);
    }

    async fn the_local_store_purges_a_share_whose_file_was_already_removed(backend: Backend) {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let (id, path) = local_share(&app, sender).await;
        app.expire_share(id).await;
        std::fs::remove_file(&path).unwrap();

        let done = local_gc(&app, NO_TIME, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(1, 0, 0));
        assert_eq!(status(&app, id).await, "purged");
    }

    async fn a_delete_that_really_fails_on_disk_backs_off_and_does_not_stop_the_pass(backend: Backend) {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let (consumed, consumed_path) = local_share(&app, sender).await;
        let (expired, expired_path) = local_share(&app, sender).await;
        let (healthy, healthy_path) = local_share(&app, sender).await;
        assert!(app.state.lifecycle.mark_consumed(consumed).await.unwrap());
        app.expire_share(expired).await;
        app.expire_share(healthy).await;
        make_undeletable(&consumed_path);
        make_undeletable(&expired_path);
        let gc = local_gc(&app, NO_TIME, Duration::from_secs(60));

        let first = gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(first, report(1, 2, 0), "both undeletable rows fail, the later healthy one is purged");
        assert_eq!(status(&app, consumed).await, "consumed");
        assert_eq!(status(&app, expired).await, "active");
        for id in [consumed, expired] {
            assert_eq!(purge_attempts(&app, id).await, 1);
            let wait = seconds_until_next_attempt(&app, id).await;
            assert!((55.0..=65.0).contains(&wait), "share {id} backs off {wait}s, not about 60s");
            assert_eq!(purged_events(&app, id).await, 0);
        }
        assert!(consumed_path.is_dir() && expired_path.is_dir());
        assert_eq!(status(&app, healthy).await, "purged");
        assert!(!healthy_path.exists());

        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0), "backing-off rows wait");

        for (id, path) in [(consumed, &consumed_path), (expired, &expired_path)] {
            std::fs::remove_dir_all(path).unwrap();
            backoff_elapsed(&app, id).await;
        }
        let healed = gc.collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(healed, report(2, 0, 0));
        assert_eq!(status(&app, consumed).await, "purged");
        assert_eq!(status(&app, expired).await, "purged");
    }
}

// The backoff formula: base × 2^min(attempts before the failure, 6).
both_backends! {
    async fn the_backoff_doubles_with_each_failure(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.expired_share().await;
        f.files.place(&key);
        f.files.fail_on(&key);
        let gc = f.gc_with(NO_TIME, Duration::from_secs(60));

        let mut waits = Vec::new();
        for _ in 0..3 {
            assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 1, 0));
            waits.push(seconds_until_next_attempt(&f.app, id).await);
            backoff_elapsed(&f.app, id).await;
        }

        assert_eq!(purge_attempts(&f.app, id).await, 3);
        for (wait, expected) in waits.iter().zip([60.0, 120.0, 240.0]) {
            assert!((wait - expected).abs() <= 5.0, "backoffs {waits:?}, expected about 60, 120, 240 seconds");
        }
    }

    async fn the_backoff_is_capped_at_64_times_the_base(backend: Backend) {
        let f = Fixture::new(backend).await;
        let (id, key) = f.expired_share().await;
        f.files.place(&key);
        f.files.fail_on(&key);
        execute(
            f.app.db(),
            "UPDATE shares SET purge_attempts = 10 WHERE id = $1",
            "UPDATE shares SET purge_attempts = 10 WHERE id = $1",
            id,
        )
        .await;

        let done = f.gc_with(NO_TIME, Duration::from_secs(60)).collect(10, Trigger::Cli).await.unwrap();

        assert_eq!(done, report(0, 1, 0));
        assert_eq!(purge_attempts(&f.app, id).await, 11);
        let wait = seconds_until_next_attempt(&f.app, id).await;
        assert!((wait - 60.0 * 64.0).abs() <= 5.0, "backs off {wait}s, expected about 3840s");
    }
}

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
both_backends! {
    async fn two_collectors_racing_purge_every_share_exactly_once(backend: Backend) {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let (active, active_path) = local_share(&app, sender).await;
        let mut collectable = Vec::new();
        for _ in 0..200 {
            collectable.push(local_share(&app, sender).await);
        }
        let expired = execute(
            app.db(),
            "UPDATE shares SET expires_at = unixepoch('subsec') - 1 WHERE id <> $1",
            "UPDATE shares SET expires_at = now() - interval '1 second' WHERE id <> $1",
            active,
        )
        .await;
        assert_eq!(expired, 200);
        let start = Arc::new(tokio::sync::Barrier::new(2));
        let one = local_gc(&app, NO_TIME, Duration::from_secs(60));
        let two = local_gc(&app, NO_TIME, Duration::from_secs(60));

        let (one, two) =
            tokio::join!(tokio::spawn(drain(one, start.clone())), tokio::spawn(drain(two, start.clone())));
        let (one, two) = (one.unwrap(), two.unwrap());

        println!("[{backend:?}] runner one {one:?}, runner two {two:?}");
        assert_eq!(one.purged + two.purged, 200, "one {one:?}, two {two:?}");
        assert_eq!(one.failed + two.failed, 0, "one {one:?}, two {two:?}");
        for (id, path) in &collectable {
            assert!(!path.exists(), "share {id}'s file is still on disk");
        }
        assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE status = 'purged' AND id <> $1", active).await, 200);
        assert_eq!(
            count(
                app.db(),
                "SELECT count(*) FROM shares s WHERE s.id <> $1
                    AND (SELECT count(*) FROM share_events e WHERE e.share_id = s.id AND e.kind = 'purged') <> 1",
                active,
            )
            .await,
            0,
            "every share must have exactly one purged event"
        );
        assert_eq!(count(app.db(), "SELECT count(*) FROM share_events WHERE kind = 'purged' AND share_id > $1", 0).await, 200);
        assert_eq!(status(&app, active).await, "active");
        assert_eq!(purged_events(&app, active).await, 0);
        assert!(active_path.is_file(), "the active share's file must stay");
    }
}
