//! A deletion case on the object store: the sender's objects are deleted and looked for again
//! (a HEAD) before the step counts as verified; the other sender's objects stay.

use watasu::{
    deletion::{CaseState, Outcome},
    storage::{FileStore, ObjectFileStore, StoreError},
};

use super::{assert_all_verified, fixtures::*, steps};
use crate::{
    both_backends,
    support::{Backend, TestApp, s3},
};

async fn a_deletion_case_deletes_and_verifies_the_senders_objects_in_the_bucket(backend: Backend) {
    let server = s3::shared();
    let bucket = server.create_bucket();
    let app = TestApp::spawn_with(backend, |s| {
        s.access_time_gc = false;
        s.storage = server.storage_settings(&bucket);
    })
    .await;
    let bystander = populate(&app, "other@example.test").await;
    let sender = populate(&app, "leaving@example.test").await;
    let objects = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), server.builder()).unwrap();
    for key in sender.storage_keys.iter().chain(&bystander.storage_keys) {
        assert!(objects.open(key).await.is_ok(), "the files are in the bucket");
    }
    let runner = runner(&app, "object-store");
    let case = admin_case(&runner, sender.id).await;

    let state = runner.run_case(case.id).await.unwrap();

    assert_eq!(state, Some(CaseState::Completed));
    assert_all_verified(&app, case.id).await;
    let step = steps(&app, case.id).await.into_iter().find(|s| s.store == "stored_files").unwrap();
    assert_eq!(
        (step.outcome(), step.found, step.remaining),
        (Outcome::Deleted, Some(sender.storage_keys.len() as i64), Some(0)),
        "{step:?}"
    );
    for key in &sender.storage_keys {
        assert!(matches!(objects.open(key).await, Err(StoreError::NotFound)), "an object outlived its deletion");
    }
    for key in &bystander.storage_keys {
        assert!(objects.open(key).await.is_ok(), "the other sender's file went");
    }
}

both_backends!(a_deletion_case_deletes_and_verifies_the_senders_objects_in_the_bucket);
