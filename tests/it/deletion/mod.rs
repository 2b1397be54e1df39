//! Verifiable deletion of a sender's data (seed 003): the sender's request with their password,
//! an admin's case, steps verified store by store, crashes and failing stores, "not found" only
//! after a search, and who may see what. Restores and logs are in `restore`.

mod admin_pages;
mod every_store;
pub(crate) mod fixtures;
mod misbehaving_store;
mod object_store;
mod races;
mod restore;
mod states;
mod upgrade;

use std::sync::atomic::Ordering;

use watasu::deletion::{ActorRole, CaseState, Interrupted, OpenRequest, Outcome, Store};

use self::fixtures::*;
use crate::{
    both_backends,
    support::{Backend, TestApp, count},
};

/// Every step of a case, in run order.
async fn steps(app: &TestApp, case_id: i64) -> Vec<watasu::deletion::StepRow> {
    app.state.services.deletion.cases().steps(case_id).await.unwrap()
}

/// Asserts the case completed with every store done and every deleting store verified empty.
async fn assert_all_verified(app: &TestApp, case_id: i64) {
    for step in steps(app, case_id).await {
        let outcome = step.outcome();
        assert!(outcome.is_done(), "{} is {outcome:?}", step.store);
        if step.action == "delete" {
            assert_eq!(step.remaining, Some(0), "{} was not verified empty", step.store);
            assert!(step.verified_at.is_some(), "{} was never verified", step.store);
        } else {
            assert_eq!(outcome, Outcome::DocumentedConstraint, "{}", step.store);
        }
    }
}

/// What a case's step for `store` found.
fn steps_found(steps: &[watasu::deletion::StepRow], store: &str) -> Option<i64> {
    steps.iter().find(|step| step.store.code() == store).and_then(|step| step.found)
}

async fn a_sender_deletes_their_account_and_every_store_ends_verified(backend: Backend) {
    let app = deletion_app(backend).await;
    let bystander = populate(&app, "other@example.test").await;
    let sender = populate(&app, "leaving@example.test").await;
    let untouched = leftovers(&app, &bystander).await;
    let phone = app.sign_in(&sender.email, PASSWORD).await;
    let account = sender.browser.get("/account").await;

    let answer = sender
        .browser
        .post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)])
        .await;

    assert_eq!(answer.status, 200, "{}", answer.body);
    let reference = answer.texts(".case-reference").pop().expect("the page names the case");
    assert!(reference.starts_with("DEL-") && reference.len() == 16, "{reference}");
    assert_eq!(sender.browser.get("/shares").await.header("location"), Some("/login"), "still signed in");
    assert_eq!(phone.get("/shares").await.header("location"), Some("/login"), "still signed in elsewhere");
    wait_for_state(&app, &reference, CaseState::Completed).await;
    let case = app.state.services.deletion.cases().find_by_reference(&reference).await.unwrap().unwrap();
    assert_eq!(case.actor_role, ActorRole::Own.code());
    assert_all_verified(&app, case.id).await;
    let found_steps = steps(&app, case.id).await;
    let found: Vec<_> = steps(&app, case.id)
        .await
        .into_iter()
        .map(|s| (s.outcome().code(), s.store.code().to_owned()))
        .map(|(o, s)| (s, o))
        .collect();
    for store in [
        "sessions",
        "invitations",
        "codes",
        "grants",
        "mail_outbox",
        "share_events",
        "rate_limits",
        "shares",
        "stored_files",
        "file_records",
        "account",
    ] {
        assert!(found.contains(&(store.to_owned(), "deleted")), "{store} not deleted: {found:?}");
    }
    assert_eq!(leftovers(&app, &sender).await, vec![], "something of the sender is left");
    // The evidence counts each stored file once, also the two that two recipients shared.
    let found = |store: &str| steps_found(&found_steps, store);
    assert_eq!((found("stored_files"), found("file_records")), (Some(4), Some(4)), "{found_steps:?}");
    let mails: Vec<_> = app.smtp.messages().into_iter().filter(|m| m.to == [sender.email.clone()]).collect();
    assert_eq!(mails.len(), 1, "one final mail");
    assert!(mails[0].text().contains(&reference), "{}", mails[0].text());
    assert!(FILE_NAMES.iter().all(|n| !mails[0].text().contains(n)));
    assert_eq!(leftovers(&app, &bystander).await, untouched, "the other sender lost data");
}

async fn the_password_is_asked_again_and_a_wrong_one_changes_nothing(backend: Backend) {
    let app = deletion_app(backend).await;
    let sender = populate(&app, "leaving@example.test").await;
    let account = sender.browser.get("/account").await;
    assert_eq!(
        account.attr("form[action='/account/delete'] input[type=password]", "name").as_deref(),
        Some("password")
    );

    for password in ["wrong password entirely", ""] {
        let answer = sender
            .browser
            .post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", password)])
            .await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert_eq!(answer.texts("#delete-account [role=alert]").len(), 1, "no clear error");
    }
    let no_field = sender.browser.post_form("/account/delete", &[("csrf_token", &account.csrf_token())]).await;
    assert_eq!(no_field.status, 400);

    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE id > $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM users WHERE id = $1 AND disabled_at IS NULL", sender.id).await, 1);
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM shares WHERE sender_id = $1 AND revoked_at IS NULL", sender.id).await,
        sender.shares.len() as i64
    );
    assert_eq!(sender.browser.get("/shares").await.status, 200, "signed out by a refused form");
}

async fn a_crash_after_any_step_resumes_without_repeating_or_missing_anything(backend: Backend) {
    let app = deletion_app(backend).await;
    let bystander = populate(&app, "other@example.test").await;
    let untouched = leftovers(&app, &bystander).await;
    every_store::team_endpoint(&app, bystander.id).await;
    for (n, store) in Store::ORDER.into_iter().enumerate() {
        let sender = populate(&app, &format!("crash-{n}@example.test")).await;
        every_store::plant_in_every_store(&app, sender.id).await;
        let request =
            OpenRequest { subject_id: sender.id, actor_id: Some(sender.id), role: ActorRole::Own, reapplies: None };
        let crashing = runner(&app, "restarting-instance").interrupt_after(store);
        let case = crashing.open(&request).await.unwrap();

        let error = crashing.run_case(case.id).await.expect_err("the hook interrupts the run");
        assert!(error.is::<Interrupted>(), "{error:#}");
        let state = runner(&app, "restarting-instance").run_case(case.id).await.unwrap();

        assert_eq!(state, Some(CaseState::Completed), "after a crash at {store:?}");
        assert_all_verified(&app, case.id).await;
        assert_eq!(leftovers(&app, &sender).await, vec![], "missed after a crash at {store:?}");
        let final_mails = app.smtp.messages().into_iter().filter(|m| m.to == [sender.email.clone()]).count();
        assert_eq!(final_mails, 1, "final mail after a crash at {store:?}");
        let evidence = app.state.services.deletion.cases().evidence(case.id).await.unwrap();
        for step in steps(&app, case.id).await {
            let deleted = evidence.iter().filter(|e| e.store == step.store && e.outcome == "deleted").count();
            assert!(deleted <= 1, "{} recorded as deleted {deleted} times after a crash at {store:?}", step.store);
            if step.store == store.code() && store.action() == watasu::deletion::Action::Delete {
                assert_eq!(step.outcome(), Outcome::Deleted, "the crashed step's data was forgotten: {step:?}");
                assert!(step.found.unwrap_or(0) > 0, "{step:?}");
            }
        }
    }
    assert_eq!(leftovers(&app, &bystander).await, untouched, "the other sender lost data");
}

async fn a_store_that_keeps_failing_waits_for_review_then_completes_once_fixed(backend: Backend) {
    let app = deletion_app(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let sender = populate(&app, "leaving@example.test").await;
    let store = store_failing_deletes(&app);
    let failing = impatient_runner(&app, "failing", store.clone(), 3);
    let case = admin_case(&failing, sender.id).await;

    let state = failing.run_case(case.id).await.unwrap();

    assert_eq!(state, Some(CaseState::PartiallyCompleted));
    let stuck = steps(&app, case.id).await.into_iter().find(|s| s.store == "stored_files").unwrap();
    assert_eq!((stuck.outcome(), stuck.attempts, stuck.reason.as_deref()), (Outcome::NeedsReview, 3, Some("storage")));
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM users WHERE id = $1", sender.id).await,
        1,
        "the key to the rest went early"
    );
    let list = admin.get("/admin/deletions").await;
    assert_eq!(list.attr("#needs-review .review-item", "data-store").as_deref(), Some("stored_files"), "{}", list.body);
    let page = admin.get(&format!("/admin/deletions/{}", case.reference)).await;
    assert_eq!(page.attr("[data-store=stored_files]", "data-outcome").as_deref(), Some("needs_review"));
    assert_eq!(page.attr("[data-store=account]", "data-outcome").as_deref(), Some("pending"));

    store.hook.fail_deletes.store(false, Ordering::SeqCst);
    let retried = admin
        .post_form(&format!("/admin/deletions/{}/retry", case.reference), &[("csrf_token", &page.csrf_token())])
        .await;

    assert_eq!(retried.status, 303);
    wait_for_state(&app, &case.reference, CaseState::Completed).await;
    assert_all_verified(&app, case.id).await;
    assert_eq!(leftovers(&app, &sender).await, vec![]);
    assert!(admin.get("/admin/deletions").await.texts("#needs-review .review-item").is_empty());
}

async fn not_found_is_recorded_only_after_a_search_by_the_right_key(backend: Backend) {
    let app = deletion_app(backend).await;
    // Nothing but an account: every store is searched, by its key, and found empty.
    let empty = app.create_sender("empty@example.test", "Empty").await;
    let request = OpenRequest { subject_id: empty, actor_id: None, role: ActorRole::Admin, reapplies: None };
    let quiet = runner(&app, "quiet");
    let case = quiet.open(&request).await.unwrap();
    assert_eq!(quiet.run_case(case.id).await.unwrap(), Some(CaseState::Completed));
    let evidence = app.state.services.deletion.cases().evidence(case.id).await.unwrap();
    for store in ["sessions", "shares", "stored_files", "file_records", "codes"] {
        let row = evidence.iter().find(|e| e.store == store).unwrap();
        assert_eq!((row.outcome.code(), row.found), ("not_found", Some(0)), "{store}");
        assert_eq!(row.searched_by, Store::parse(store).unwrap().searched_by());
    }
    assert_eq!(evidence.iter().find(|e| e.store == "sessions").unwrap().searched_by, "sessions.user_id");
    assert_eq!(evidence.iter().find(|e| e.store == "shares").unwrap().searched_by, "shares.sender_id");

    // A look on disk that cannot be made is not "nothing found".
    let sender = populate(&app, "leaving@example.test").await;
    let store = FailingStore::new(app.state.store.clone(), Failures::default());
    store.hook.fail_lookups.store(true, Ordering::SeqCst);
    let blind = impatient_runner(&app, "blind", store, 2);
    let case = admin_case(&blind, sender.id).await;
    assert_eq!(blind.run_case(case.id).await.unwrap(), Some(CaseState::PartiallyCompleted));
    let files: Vec<_> = app
        .state
        .services
        .deletion
        .cases()
        .evidence(case.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.store == "stored_files")
        .collect();
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|e| e.outcome != "not_found" && e.detail.as_deref() == Some("storage")), "{files:?}");
}

async fn a_case_only_moves_forward(backend: Backend) {
    let app = deletion_app(backend).await;
    let subject = app.create_sender("leaving@example.test", "Sato").await;
    let cases = app.state.services.deletion.cases();
    let request = OpenRequest { subject_id: subject, actor_id: None, role: ActorRole::Admin, reapplies: None };
    let held = runner(&app, "held");
    let case = held.open(&request).await.unwrap();
    assert_eq!(case.state(), CaseState::Received);

    assert!(cases.transition(case.id, CaseState::Received, CaseState::Validated).await.unwrap());
    assert!(!cases.transition(case.id, CaseState::Validated, CaseState::Received).await.unwrap(), "moved backwards");
    assert!(
        !cases.transition(case.id, CaseState::Received, CaseState::InProgress).await.unwrap(),
        "moved from a state it is not in"
    );
    assert!(!cases.transition(case.id, CaseState::Validated, CaseState::Completed).await.unwrap(), "skipped the work");
    assert_eq!(held.run_case(case.id).await.unwrap(), Some(CaseState::Completed));
    for back in [CaseState::InProgress, CaseState::VerificationPending, CaseState::Failed] {
        assert!(!cases.transition(case.id, CaseState::Completed, back).await.unwrap(), "left completed for {back:?}");
    }
    assert_eq!(cases.find(case.id).await.unwrap().unwrap().state(), CaseState::Completed);
    assert!(matches!(held.open(&request).await, Err(watasu::deletion::OpenError::NoSuchAccount)));
}

async fn only_an_admin_opens_a_case_for_someone_else_or_sees_the_cases(backend: Backend) {
    let app = deletion_app(backend).await;
    app.create_admin("admin@example.test").await;
    let other = populate(&app, "other@example.test").await;
    let sender = populate(&app, "sender@example.test").await;
    let page = sender.browser.get("/account").await;
    assert_eq!(sender.browser.get("/admin/deletions").await.status, 404);
    assert_eq!(sender.browser.get("/admin/deletions/DEL-000000000000").await.status, 404);
    let refused =
        sender.browser.post_form(&format!("/team/{}/delete", other.id), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(refused.status, 404);
    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE id > $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM users WHERE id = $1 AND disabled_at IS NULL", other.id).await, 1);

    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    let opened = admin.post_form(&format!("/team/{}/delete", other.id), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(opened.status, 303, "{}", opened.body);
    let location = opened.header("location").unwrap().to_owned();
    let reference = location.strip_prefix("/admin/deletions/").unwrap().to_owned();
    wait_for_state(&app, &reference, CaseState::Completed).await;
    let case_page = admin.get(&location).await;
    assert_eq!(case_page.attr(".case-state", "data-state").as_deref(), Some("completed"));
    assert_eq!(case_page.texts(".deletion-step").len(), Store::ORDER.len());
    let list = admin.get("/admin/deletions").await;
    assert_eq!(list.attr(&format!("[data-reference='{reference}']"), "data-state").as_deref(), Some("completed"));
    assert_eq!(leftovers(&app, &other).await, vec![]);
    let again = admin.post_form(&format!("/team/{}/delete", sender.id), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(again.status, 303);
}

both_backends!(
    a_sender_deletes_their_account_and_every_store_ends_verified,
    the_password_is_asked_again_and_a_wrong_one_changes_nothing,
    a_crash_after_any_step_resumes_without_repeating_or_missing_anything,
    a_store_that_keeps_failing_waits_for_review_then_completes_once_fixed,
    not_found_is_recorded_only_after_a_search_by_the_right_key,
    a_case_only_moves_forward,
    only_an_admin_opens_a_case_for_someone_else_or_sees_the_cases
);
