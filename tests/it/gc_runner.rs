//! The GC runner: one pass in flight per process, a pass asked for by a response always runs
//! (after the response's body is sent), and a pass the database breaks mid-way is recorded failed.

use std::{sync::Arc, time::Duration};

use watasu::{
    db::Db,
    lifecycle::{GcRunner, LifecycleRepository, ShareGc},
    maintenance::Trigger,
    on_db,
    share::ShareEvents,
};

use crate::{
    both_backends,
    lifecycle::quiet_app,
    support::{
        Backend, TestApp, count, eventually,
        fake_store::FakeFileStore,
        wrapped_store::{Call, Gate, Wrapped},
    },
};

const HOUR: Duration = Duration::from_secs(3600);

/// A fake store whose deletes wait at a gate, so a test can hold a pass in flight and see that
/// it is there.
type GatedStore = Wrapped<FakeFileStore, Gate>;

fn gated_store() -> Arc<GatedStore> {
    Wrapped::new(Arc::new(FakeFileStore::new()), Gate::new(Call::Delete))
}

fn gated_runner(app: &TestApp, store: Arc<GatedStore>) -> GcRunner {
    let repo = LifecycleRepository::new(app.db().clone(), Duration::ZERO, HOUR);
    GcRunner::new(ShareGc::new(repo, store, ShareEvents::new(app.db().clone())), 5)
}

async fn status(db: &Db, share_id: i64) -> String {
    let sql = "SELECT status FROM shares WHERE id = $1";
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(share_id).fetch_one(pool).await.unwrap())
}

/// The run the GC recorded for a share, as (trigger, state, note).
async fn gc_run_of(db: &Db, share_id: i64) -> (String, String, Option<String>) {
    let sql = "SELECT r.trigger, r.state, r.note FROM maintenance_runs r JOIN maintenance_items i ON i.run_id = r.id
                WHERE r.kind = 'share_gc' AND i.target_id = $1";
    on_db!(db, |pool| sqlx::query_as(sql).bind(share_id).fetch_one(pool).await.unwrap())
}

/// A share whose file is in `store`, collectable at once when `expired`.
async fn share_in(app: &TestApp, store: &GatedStore, expired: bool) -> i64 {
    let share = app.create_share().await;
    let key: String = {
        let sql = "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1";
        on_db!(app.db(), |pool| sqlx::query_scalar(sql).bind(share.id).fetch_one(pool).await.unwrap())
    };
    store.inner.place(&key);
    if expired {
        app.expire_share(share.id).await;
    }
    share.id
}

async fn only_one_gc_pass_runs_at_a_time_in_a_process(backend: Backend) {
    let app = quiet_app(backend).await;
    let store = gated_store();
    let share = share_in(&app, &store, true).await;
    let runner = gated_runner(&app, store.clone());

    let timer = tokio::spawn({
        let runner = runner.clone();
        async move { runner.try_pass(Trigger::Timer).await }
    });
    store.hook.wait_entered().await;

    assert!(runner.try_pass(Trigger::Cli).await.is_none(), "a second pass ran beside the one in flight");
    assert!(runner.clone().try_pass(Trigger::Timer).await.is_none(), "a clone of the runner shares the flag");
    assert_eq!((runner.stats().started, runner.stats().skipped_busy), (1, 2));

    store.hook.open();
    let report = timer.await.unwrap().expect("the first pass ran").unwrap();
    assert_eq!((report.purged, report.failed, report.skipped), (1, 0, 0));
    assert_eq!(status(app.db(), share).await, "purged");
    // The flag was given back: the next pass runs.
    assert!(runner.try_pass(Trigger::Cli).await.is_some());
}

async fn a_pass_asked_for_while_the_timers_is_in_flight_still_runs_afterwards(backend: Backend) {
    let app = quiet_app(backend).await;
    let store = gated_store();
    let first = share_in(&app, &store, true).await;
    let late = share_in(&app, &store, false).await;
    let runner = gated_runner(&app, store.clone());
    let timer = tokio::spawn({
        let runner = runner.clone();
        async move { runner.try_pass(Trigger::Timer).await }
    });
    store.hook.wait_entered().await;

    // The timer's pass chose its candidates before this share became collectable; then the
    // last request of the day ends and asks for a pass, which finds the timer's in flight.
    app.expire_share(late).await;
    runner.spawn_pass();
    eventually(Duration::from_secs(10), "the response's pass to find the timer's in flight", async || {
        runner.stats().skipped_busy >= 1
    })
    .await;
    store.hook.open();
    let report = timer.await.unwrap().unwrap().unwrap();
    assert_eq!(report.purged, 1, "the timer's pass took only the share due when it started");
    assert_eq!(status(app.db(), first).await, "purged");

    // The pass has ended once its run is finished: its items are written after the purge.
    let finished = "SELECT count(*) FROM maintenance_runs r JOIN maintenance_items i ON i.run_id = r.id
                         WHERE r.kind = 'share_gc' AND r.state = 'succeeded' AND i.target_id = $1";
    eventually(Duration::from_secs(10), "the asked-for pass to collect the late share", async || {
        count(app.db(), finished, late).await == 1
    })
    .await;
    assert_eq!(status(app.db(), late).await, "purged");
    assert_eq!(gc_run_of(app.db(), late).await.0, "request");
}

async fn a_gc_pass_the_database_breaks_mid_way_is_recorded_as_failed(backend: Backend) {
    let app = quiet_app(backend).await;
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    // Every purge now fails inside the database, after the pass has opened its run.
    break_purges(app.db(), "TRUE").await;

    let outcome = app.state.services.gc.gc().collect(5, Trigger::Cli).await;

    assert!(outcome.is_err(), "{outcome:?}");
    let runs = count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE kind = 'share_gc' AND id > $1", 0).await;
    assert_eq!(runs, 1);
    let open = count(
        app.db(),
        "SELECT count(*) FROM maintenance_runs WHERE kind = 'share_gc' AND state = 'running' AND id > $1",
        0,
    )
    .await;
    assert_eq!(open, 0, "the broken pass's run is still shown as running");
    let (state, note): (String, Option<watasu::maintenance::Note>) = {
        let sql = "SELECT state, note FROM maintenance_runs WHERE kind = 'share_gc'";
        on_db!(app.db(), |pool| sqlx::query_as(sql).fetch_one(pool).await.unwrap())
    };
    assert_eq!(state, "failed");
    let note = note.expect("the failure is explained");
    assert!(note.starts_with("database error"), "{note}");
    assert!(!note.contains("disk under"), "the ledger must not quote the database's message: {note}");
    assert_eq!(status(app.db(), share.id).await, "active");
}

async fn a_gc_pass_the_database_breaks_mid_way_records_the_files_it_already_deleted(backend: Backend) {
    let app = quiet_app(backend).await;
    for _ in 0..2 {
        let share = app.create_share().await;
        app.expire_share(share.id).await;
    }
    // Whichever share the pass purges first is purged; the purge of any other then fails.
    break_purges(app.db(), "EXISTS (SELECT 1 FROM shares WHERE status = 'purged')").await;

    let outcome = app.state.services.gc.gc().collect(5, Trigger::Cli).await;

    assert!(outcome.is_err(), "{outcome:?}");
    let purged = count(app.db(), "SELECT max(id) FROM shares WHERE status = 'purged' AND id > $1", 0).await;
    let (state, deleted): (String, i64) = {
        let sql = "SELECT state, deleted FROM maintenance_runs WHERE kind = 'share_gc'";
        on_db!(app.db(), |pool| sqlx::query_as(sql).fetch_one(pool).await.unwrap())
    };
    assert_eq!((state.as_str(), deleted), ("failed", 1), "the run does not count the file it deleted");
    let items: Vec<(i64, String)> = {
        let sql = "SELECT target_id, outcome FROM maintenance_items WHERE target_kind = 'share'";
        on_db!(app.db(), |pool| sqlx::query_as(sql).fetch_all(pool).await.unwrap())
    };
    assert_eq!(items, [(purged, "deleted".to_owned())], "the purged share has no item");
}

async fn the_after_response_pass_is_asked_for_only_once_the_body_is_sent(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |_| {}).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    // Larger than every socket buffer between us and the server: the body cannot be sent
    // whole while we do not read.
    let content: &'static [u8] = Box::leak(vec![7u8; 64 << 20].into_boxed_slice());
    let share = app.fake_share().sender(sender).recipient("r@example.test").file("big.bin", content).create().await;
    let session = app.state.sessions.create().await.unwrap();
    app.state.shares.grants.grant(session.session.id, share.id).await.unwrap();
    let browser = app.browser();
    browser.set_cookie("watasu_session", session.cookie_value.expose());
    let claimed = app.state.services.gc.stats().requested;
    assert_eq!(browser.claim(&share.token, &session.session.csrf_secret).await.status(), 303);
    // The claim's 303 has an empty body: its own pass is asked for once that was sent.
    eventually(Duration::from_secs(10), "the claim's pass to be asked for", async || {
        app.state.services.gc.stats().requested == claimed + 1
    })
    .await;
    let before = app.state.services.gc.stats().requested;

    let mut response = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(response.status(), 200);
    let mut received = response.chunk().await.unwrap().expect("the body starts").len();

    // The handler has returned and the body has begun: no pass may have been asked for yet.
    assert_eq!(app.state.services.gc.stats().requested, before, "the pass was asked for before the body was sent");
    while let Some(chunk) = response.chunk().await.unwrap() {
        received += chunk.len();
    }
    assert_eq!(received, content.len());
    eventually(Duration::from_secs(10), "the pass to be asked for once the body was sent", async || {
        app.state.services.gc.stats().requested == before + 1
    })
    .await;
}

both_backends!(
    only_one_gc_pass_runs_at_a_time_in_a_process,
    a_pass_asked_for_while_the_timers_is_in_flight_still_runs_afterwards,
    a_gc_pass_the_database_breaks_mid_way_is_recorded_as_failed,
    a_gc_pass_the_database_breaks_mid_way_records_the_files_it_already_deleted,
    the_after_response_pass_is_asked_for_only_once_the_body_is_sent
);

/// Makes a share's purge fail inside the database whenever `condition` holds, as a disk failing
/// mid-pass would. SQLite tests the condition in its trigger's WHEN; PostgreSQL in the trigger's
/// function, as its WHEN takes no subquery.
async fn break_purges(db: &Db, condition: &'static str) {
    const FAILED: &str = "the disk under the database failed";
    let statements = match db {
        Db::Sqlite(_) => vec![format!(
            "CREATE TRIGGER break_purge BEFORE UPDATE OF status ON shares
             WHEN NEW.status = 'purged' AND ({condition})
             BEGIN SELECT RAISE(ABORT, '{FAILED}'); END"
        )],
        Db::Postgres(_) => vec![
            format!(
                "CREATE FUNCTION break_purge() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN IF {condition} THEN RAISE EXCEPTION '{FAILED}'; END IF; RETURN NEW; END $$"
            ),
            "CREATE TRIGGER break_purge BEFORE UPDATE ON shares FOR EACH ROW
             WHEN (NEW.status = 'purged') EXECUTE FUNCTION break_purge()"
                .to_owned(),
        ],
    };
    for statement in statements {
        on_db!(db, |pool| sqlx::query(sqlx::AssertSqlSafe(statement)).execute(pool).await.map(drop).unwrap());
    }
}
