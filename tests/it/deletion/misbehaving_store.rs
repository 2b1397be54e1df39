//! Seed 003's two stores that misbehave without failing, played by a proxy of the test's own in
//! front of a real S3 server (s3s-fs): one answers "deleted" and keeps the object (looking again
//! catches it, and the case does not complete), one takes the request and never answers (the step
//! times out, backs off, and the case resumes once the store answers again).

use std::{sync::Arc, time::Duration};

use object_store::ClientOptions;
use watasu::{
    deletion::{CaseState, Outcome, RetryPolicy},
    storage::{FileStore, ObjectFileStore, ResumableStore, StoreError},
};

use super::{assert_all_verified, fixtures::*, steps};
use crate::{
    both_backends,
    support::{
        Backend, TestApp, count, s3,
        store_proxy::{Mode, StoreProxy},
    },
};

/// The app with its files in a fresh bucket that it reaches through `proxy`; and the bucket as
/// the server itself answers for it, past the proxy.
async fn app_behind(backend: crate::support::Backend, proxy: &StoreProxy) -> (TestApp, ObjectFileStore) {
    let server = s3::shared();
    let bucket = server.create_bucket();
    let mut storage = server.storage_settings(&bucket);
    storage.endpoint_url = Some(proxy.endpoint());
    let app = TestApp::spawn_with(backend, |s| {
        s.access_time_gc = false;
        s.storage = storage;
    })
    .await;
    let direct = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), server.builder()).unwrap();
    (app, direct)
}

async fn in_bucket(direct: &ObjectFileStore, key: &str) -> bool {
    match direct.open(key).await {
        Ok(_) => true,
        Err(StoreError::NotFound) => false,
        Err(error) => panic!("the bucket could not be read: {error}"),
    }
}

async fn step(app: &TestApp, case_id: i64, store: &str) -> watasu::deletion::StepRow {
    steps(app, case_id).await.into_iter().find(|s| s.store == store).unwrap()
}

async fn a_store_that_answers_deleted_and_keeps_the_object_never_lets_the_case_complete(backend: Backend) {
    let proxy = StoreProxy::start(&s3::shared().addr).await;
    let (app, direct) = app_behind(backend, &proxy).await;
    let sender = populate(&app, "leaving@example.test").await;
    proxy.set(Mode::Lie);
    let lied_to = impatient_runner(&app, "lied-to", app.state.store.clone(), 3);
    let case = admin_case(&lied_to, sender.id).await;

    let state = lied_to.run_case(case.id).await.unwrap();

    assert!(proxy.lies() > 0, "the store was never asked to delete");
    assert_eq!(state, Some(CaseState::PartiallyCompleted));
    let files = step(&app, case.id, "stored_files").await;
    assert_eq!((files.outcome(), files.reason.as_deref()), (Outcome::NeedsReview, Some("storage")), "{files:?}");
    assert_ne!(files.remaining, Some(0), "the kept objects were taken for deleted");
    for key in &sender.storage_keys {
        assert!(in_bucket(&direct, key).await, "the object is gone after all");
    }
    let users = count(app.db(), "SELECT count(*) FROM users WHERE id = $1", sender.id).await;
    assert_eq!(users, 1, "the account went while its files are still there");

    // The store tells the truth again and an admin sends the case back: it completes.
    proxy.set(Mode::Forward);
    // Held first, so that the app's own worker does not take the case once it is due.
    assert!(app.state.services.deletion.cases().claim(case.id, "lied-to", Duration::from_secs(600)).await.unwrap());
    app.state.services.records.retry_parked_steps(case.id).await.unwrap();
    let state = runner(&app, "lied-to").run_case(case.id).await.unwrap();

    assert_eq!(state, Some(CaseState::Completed));
    assert_all_verified(&app, case.id).await;
    for key in &sender.storage_keys {
        assert!(!in_bucket(&direct, key).await, "an object outlived the completed case");
    }
}

async fn a_store_that_hangs_times_the_step_out_and_the_case_resumes_after_the_backoff(backend: Backend) {
    let proxy = StoreProxy::start(&s3::shared().addr).await;
    let (app, direct) = app_behind(backend, &proxy).await;
    let sender = populate(&app, "leaving@example.test").await;
    // A store whose client sets no deadline of its own (as a dead network mount has none):
    // only the step's deadline can end a call that is never answered.
    let options = ClientOptions::new().with_allow_http(true).with_timeout_disabled();
    let through_proxy = s3::shared().builder().with_endpoint(proxy.endpoint()).with_client_options(options);
    let location = app.state.config.settings.storage.location.clone().unwrap();
    let unbounded: Arc<dyn ResumableStore> =
        Arc::new(ObjectFileStore::from_url_with(&location, through_proxy).unwrap());
    let policy = RetryPolicy {
        base: Duration::from_secs(3600),
        cap: Duration::from_secs(3600),
        max_attempts: 8,
        store_deadline: Duration::from_secs(2),
    };
    let hung = runner_with_store(&app, "hung", unbounded).with_policy(policy);
    let case = admin_case(&hung, sender.id).await;
    proxy.set(Mode::Stall);

    // Bounded far above the deadline: without one, the step would wait for ever.
    let ran = tokio::time::timeout(Duration::from_secs(60), hung.run_case(case.id)).await;

    let state = ran.expect("a hung store held the step past its deadline").unwrap();
    assert!(proxy.stalled() > 0, "the store was never asked");
    assert_eq!(state, Some(CaseState::InProgress));
    let uploads = step(&app, case.id, "uploads").await;
    let recorded = (uploads.outcome(), uploads.reason.as_deref(), uploads.attempts, uploads.due);
    assert_eq!(recorded, (Outcome::Retryable, Some("storage timeout"), 1, false), "{uploads:?}");
    assert_eq!(step(&app, case.id, "stored_files").await.outcome(), Outcome::Pending);
    for key in &sender.storage_keys {
        assert!(in_bucket(&direct, key).await);
    }

    // The store answers again and the backoff is over (moved through the database's clock):
    // the case resumes at the step that timed out and completes.
    proxy.set(Mode::Forward);
    app.set_ago("deletion_steps", &["next_attempt_at"], 60, &format!("case_id = {}", case.id)).await;
    let state = runner(&app, "hung").run_case(case.id).await.unwrap();

    assert_eq!(state, Some(CaseState::Completed));
    assert_all_verified(&app, case.id).await;
    for key in &sender.storage_keys {
        assert!(!in_bucket(&direct, key).await, "an object outlived the completed case");
    }
}

both_backends!(
    a_store_that_answers_deleted_and_keeps_the_object_never_lets_the_case_complete,
    a_store_that_hangs_times_the_step_out_and_the_case_resumes_after_the_backoff
);
