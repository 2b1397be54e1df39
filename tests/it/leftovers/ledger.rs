//! The leftover sweep is a maintenance run of its own kind: paced at the maintenance interval
//! (not every GC tick), recorded in the ledger with its counts and no items, and run at once by
//! `watasu gc`.

use std::time::{Duration, Instant, SystemTime};

use watasu::{db::Db, maintenance::Trigger, on_db};

use super::{Subject, Where, token};
use crate::{
    both_backends,
    lifecycle::quiet_app,
    support::{Backend, TestApp, db::count},
};

/// The leftover runs as (trigger, state, deleted, failed), oldest first.
async fn leftover_runs(db: &Db) -> Vec<(String, String, i64, i64)> {
    let sql = "SELECT trigger, state, deleted, failed FROM maintenance_runs WHERE kind = 'leftovers' ORDER BY id";
    on_db!(db, |pool| sqlx::query_as(sql).fetch_all(pool).await.unwrap())
}

async fn leftover_items(app: &TestApp) -> i64 {
    let sql = "SELECT count(*) FROM maintenance_items i JOIN maintenance_runs r ON r.id = i.run_id
                WHERE r.kind = 'leftovers' AND i.id > $1";
    count(app.db(), sql, 0).await
}

/// Three old orphans in the app's own store.
async fn place_old_orphans(subject: &Subject) {
    for _ in 0..3 {
        let name = token(64);
        subject.place(&name, b"no row names me").await;
        subject.set_modified(&name, SystemTime::now() - Duration::from_secs(7200));
    }
}

async fn the_start_up_sweep_is_a_timer_run_and_gc_ticks_do_not_repeat_it(backend: Backend) {
    // GC ticks every 50 ms; the maintenance interval stays its default.
    let app = crate::support::TestApp::spawn_settled(backend, |s| {
        s.access_time_gc = false;
        s.gc_interval = Duration::from_millis(50);
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    // The start-up sweep removed the start-up sentinel (a temp file): one run, one removal.
    while leftover_runs(app.db()).await.first().is_none_or(|run| run.1 == "running") {
        assert!(Instant::now() < deadline, "the start-up leftover run never finished");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(leftover_runs(app.db()).await, [("timer".to_owned(), "succeeded".to_owned(), 1, 0)]);

    let subject = Subject::on(&app, Where::Local);
    place_old_orphans(&subject).await;
    let before = subject.names();
    let ticks = app.state.services.gc.stats().started;
    while app.state.services.gc.stats().finished < ticks + 3 {
        assert!(Instant::now() < deadline, "the GC timer stopped ticking");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(subject.names(), before, "GC ticks leave the leftovers to the maintenance interval");
    assert_eq!(leftover_runs(app.db()).await.len(), 1);
    assert_eq!(leftover_items(&app).await, 0, "leftovers are counted, never named");
}

async fn the_command_line_sweep_records_its_counts(backend: Backend) {
    let app = quiet_app(backend).await;
    let subject = Subject::on(&app, Where::Local);
    place_old_orphans(&subject).await;
    let runs = leftover_runs(app.db()).await.len();

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_watasu"))
        .arg("gc")
        .envs(crate::cli_output::env_of(&app))
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("orphan files removed 3"));
    let recorded = leftover_runs(app.db()).await;
    assert_eq!(recorded.len(), runs + 1);
    assert_eq!(recorded.last().unwrap(), &("cli".to_owned(), "succeeded".to_owned(), 3, 0));
    assert_eq!(leftover_items(&app).await, 0);
    let direct = subject.gc.sweep_leftovers(Trigger::Cli).await.unwrap();
    assert_eq!(direct.removed(), 0, "the next sweep finds nothing");
}

both_backends!(
    the_start_up_sweep_is_a_timer_run_and_gc_ticks_do_not_repeat_it,
    the_command_line_sweep_records_its_counts
);
