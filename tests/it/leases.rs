//! Sweep leases (seed 004): concurrent runs of one sweep are kept apart by the lease, a lease
//! left by a killed run is taken over once it has run out, and, under a race run for real, a
//! holder giving its lease back while another run takes it is never reported as taken over.

use crate::support::Backend;
use std::time::Duration;

use watasu::{
    maintenance::{Kind, Run, Trigger},
    sql,
};

use crate::{
    both_backends,
    maintenance::{SessionAge, insert_sessions, quiet_app, run_sql, session_exists, small_budget},
    support::count,
};

const TTL: Duration = Duration::from_secs(60);

async fn a_lease_given_back_while_another_run_takes_it_is_never_reported_as_taken_over(backend: Backend) {
    let app = quiet_app(backend).await;
    let leases = app.state.services.maintenance.leases().clone();
    let mut taken = 0;
    for round in 0..300 {
        let (live, next) = (format!("live-{round}"), format!("next-{round}"));
        assert!(leases.acquire("race", &live, TTL).await.unwrap().is_some());
        let release = tokio::spawn({
            let (leases, live) = (leases.clone(), live.clone());
            async move { leases.release("race", &live).await }
        });
        let take = tokio::spawn({
            let (leases, next) = (leases.clone(), next.clone());
            async move { leases.acquire("race", &next, TTL).await }
        });
        release.await.unwrap().unwrap();
        if let Some(take) = take.await.unwrap().unwrap() {
            taken += 1;
            assert_eq!(
                take.previous_holder, None,
                "round {round}: {live} gave its lease back unexpired, yet was reported as taken over"
            );
        }
        leases.release("race", &next).await.unwrap();
    }
    assert!(taken > 0, "no round had the second run take the lease");
}

async fn an_expired_lease_is_taken_over_and_names_its_previous_holder(backend: Backend) {
    let app = quiet_app(backend).await;
    let leases = app.state.services.maintenance.leases();
    assert!(leases.acquire("sessions", "41", TTL).await.unwrap().is_some());
    assert_eq!(leases.acquire("sessions", "42", TTL).await.unwrap(), None, "taken while held");
    crate::support::execute(
        app.db(),
        sql!("UPDATE maintenance_leases SET expires_at = " now " - " secs("$1") " WHERE name = 'sessions'"),
        1,
    )
    .await;
    let taken = leases.acquire("sessions", "42", TTL).await.unwrap().expect("an expired lease is free");
    assert_eq!(taken.previous_holder.as_deref(), Some("41"));
    assert_eq!(leases.holder("sessions").await.unwrap().as_deref(), Some("42"));
}

async fn a_lease_left_by_a_killed_run_is_taken_over_once_it_expires(backend: Backend) {
    let app = quiet_app(backend).await;
    let expired = insert_sessions(app.db(), 5, SessionAge::Expired).await;
    let m = app.state.services.maintenance.clone();
    // A run that took the sessions lease and was then killed: it never renews or finishes.
    let (killed, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "killed").await.unwrap();
    m.ledger().start(killed.id).await.unwrap().unwrap();
    let lease = m.leases().acquire("sessions", &killed.id.to_string(), Duration::from_secs(60)).await.unwrap();
    assert!(lease.is_some());

    // Skipped, not partial: the holder does the work (or its lease runs out and the next run does).
    let blocked = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    assert_eq!((blocked.state.code(), blocked.deleted), ("succeeded", 0));
    assert_eq!(blocked.note.as_deref(), Some("sessions: another run holds it"));
    assert!(session_exists(app.db(), expired[0]).await);

    // Its lease runs out, by the database's clock.
    run_sql(
        app.db(),
        sql!("UPDATE maintenance_leases SET expires_at = " now " - " secs("1") " WHERE name = 'sessions'"),
    )
    .await;
    let takeover = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    assert_eq!((takeover.state.code(), takeover.deleted), ("succeeded", 5));
    let killed = m.ledger().get(killed.id).await.unwrap().unwrap();
    assert_eq!(killed.state.code(), "failed", "the dead run is marked, not left running");
    assert!(killed.note.unwrap().contains("lease ran out"));
    assert_eq!(m.leases().holder("sessions").await.unwrap(), None, "the lease is given back after the run");
}

async fn concurrent_runs_of_one_sweep_delete_every_row_exactly_once(backend: Backend) {
    let app = quiet_app(backend).await;
    let ids = insert_sessions(app.db(), 600, SessionAge::Expired).await;
    let m = app.state.services.maintenance.clone().with_budget(small_budget(50, 1000));
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (m, start) = (m.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap()
            })
        })
        .collect();
    let mut runs: Vec<Run> = Vec::new();
    for task in tasks {
        runs.push(task.await.unwrap());
    }
    // Runs that found the lease taken did nothing; any run left over finishes the rest.
    let leftover = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    runs.push(leftover);
    let deleted: i64 = runs.iter().map(|r| r.deleted).sum();
    assert_eq!(deleted, 600, "{runs:#?}");
    // Those that found the lease taken skipped the sweep: none is recorded as partial.
    assert!(runs.iter().all(|r| r.state.code() == "succeeded"), "{runs:#?}");
    // The lease, not luck, kept them apart: the runs that started while one worked were
    // refused, and the runs that did work never overlapped.
    let refused = runs.iter().filter(|r| r.note.as_deref().is_some_and(|n| n.contains("another run holds it"))).count();
    assert!(refused >= 1, "no run was refused the lease: {runs:#?}");
    let mut working: Vec<&Run> = runs.iter().filter(|r| r.deleted > 0).collect();
    working.sort_by_key(|r| r.started_at.unwrap().0);
    for pair in working.windows(2) {
        assert!(pair[0].finished_at.unwrap().0 <= pair[1].started_at.unwrap().0, "two runs swept at once: {pair:#?}");
    }
    let deleted_items = count(
        app.db(),
        "SELECT count(DISTINCT target_id) FROM maintenance_items WHERE outcome = 'deleted' AND target_kind = 'session' AND target_id >= $1",
        ids[0],
    )
    .await;
    assert_eq!(deleted_items, 600);
    assert_eq!(count(app.db(), "SELECT count(*) FROM sessions WHERE id >= $1", ids[0]).await, 0);
}

both_backends!(
    a_lease_given_back_while_another_run_takes_it_is_never_reported_as_taken_over,
    an_expired_lease_is_taken_over_and_names_its_previous_holder,
    a_lease_left_by_a_killed_run_is_taken_over_once_it_expires,
    concurrent_runs_of_one_sweep_delete_every_row_exactly_once
);
