//! Deletion case states seldom reached: `failed` (the account the case was opened for is no longer
//! the one in the database) and a second case for an account that already has one open.

use watasu::deletion::{ActorRole, CaseState, OpenError, OpenRequest};

use super::fixtures::*;
use crate::{
    both_backends,
    support::{Backend, count, execute},
};
use watasu::sql;

async fn a_case_whose_account_is_not_the_one_it_was_opened_for_fails_and_deletes_nothing(backend: Backend) {
    let app = deletion_app(backend).await;
    let sender = populate(&app, "leaving@example.test").await;
    let request = OpenRequest { subject_id: sender.id, actor_id: None, role: ActorRole::Admin, reapplies: None };
    let held = runner(&app, "held");
    let case = held.open(&request).await.unwrap();
    // As after a restore that rewound the ids: the same id now names another account.
    execute(app.db(), sql!("UPDATE users SET created_at = created_at + " secs("1") " WHERE id = $1"), sender.id).await;

    assert_eq!(held.run_case(case.id).await.unwrap(), Some(CaseState::Failed));

    let cases = app.state.services.deletion.cases();
    assert_eq!(cases.find(case.id).await.unwrap().unwrap().state(), CaseState::Failed);
    assert!(cases.steps(case.id).await.unwrap().iter().all(|s| !s.outcome().is_done()), "a step ran");
    assert_eq!(count(app.db(), "SELECT count(*) FROM users WHERE id = $1", sender.id).await, 1);
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM shares WHERE sender_id = $1", sender.id).await,
        sender.shares.len() as i64
    );
    for back in [CaseState::InProgress, CaseState::Validated, CaseState::Completed] {
        assert!(!cases.transition(case.id, CaseState::Failed, back).await.unwrap(), "left failed for {back:?}");
    }
    // A failed case is closed: a new one may be opened for the account as it is now.
    assert!(held.open(&request).await.is_ok());
}

async fn a_second_case_for_an_account_with_an_open_one_is_refused(backend: Backend) {
    let app = deletion_app(backend).await;
    let subject = app.create_sender("leaving@example.test", "Sato").await;
    let request = OpenRequest { subject_id: subject, actor_id: None, role: ActorRole::Admin, reapplies: None };
    let held = runner(&app, "held");
    let first = held.open(&request).await.unwrap();

    let second = held.open(&request).await;

    assert!(matches!(second, Err(OpenError::AlreadyOpen)), "{second:?}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE subject_id = $1", subject).await, 1);
    assert_eq!(app.state.services.deletion.cases().find(first.id).await.unwrap().unwrap().state(), CaseState::Received);
    // Concurrent openers: still one case.
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let held = runner(&app, "held");
            let request = OpenRequest { subject_id: subject, actor_id: None, role: ActorRole::Admin, reapplies: None };
            tokio::spawn(async move { held.open(&request).await.map(|c| c.id) })
        })
        .collect();
    for racer in racers {
        assert!(matches!(racer.await.unwrap(), Err(OpenError::AlreadyOpen)));
    }
    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE subject_id = $1", subject).await, 1);
}

both_backends!(
    a_case_whose_account_is_not_the_one_it_was_opened_for_fails_and_deletes_nothing,
    a_second_case_for_an_account_with_an_open_one_is_refused
);
