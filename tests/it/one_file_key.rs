//! One file key per deployment: the first instance that stores files encrypted records its key's
//! id, and an instance with another key (one it made, or one it was given) refuses to start with
//! both ids named, before it could store a file the others cannot open. Two starting at once on a
//! fresh database: one serves, the other refuses. With the first's key copied, the second serves
//! the first's files.

use std::time::Duration;

use watasu::{
    db::Db,
    key_check::{FILE_KEY_FILE, FileKeyNotCopied, FileKeyNotTheDeployments},
    secret::{SecretKey, SecretString},
    storage::sealed::FileKeys,
};

use crate::{
    both_backends,
    key_rotation::{all_download, content},
    sealed_files::claimed_files,
    support::{Backend, TestApp, fresh_database},
};

const OTHER_KEY: &str = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";

fn id_of(hex: &str) -> String {
    FileKeys::new(&SecretKey::from_hex(hex).unwrap()).id().to_owned()
}

/// A second instance on `first`'s database and folder of files, in a data folder of its own.
async fn second(first: &TestApp, data_dir: tempfile::TempDir, file_key: Option<&str>) -> anyhow::Result<TestApp> {
    let files = first.data_dir.path().join("files");
    TestApp::try_spawn_on(data_dir, &first.state.config.database_url, |s| {
        s.file_key = file_key.map(SecretString::new);
        s.storage.location = Some(files.to_str().unwrap().to_owned());
    })
    .await
}

async fn a_second_instance_with_a_file_key_of_its_own_refuses_to_start_before_any_file_exists(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let made = first.data_dir.path().join(FILE_KEY_FILE);
    let first_id = FileKeys::new(&SecretKey::load(&made).unwrap().expect("the first made its key")).id().to_owned();
    let none = "SELECT count(*) FROM files WHERE handover_id > $1";
    assert_eq!(crate::support::count(first.db(), none, 0).await, 0, "a file exists already");

    // As each instance used to start: a data folder of its own, no key in it.
    let error = second(&first, tempfile::tempdir().unwrap(), None).await.err().expect("a second key was made");
    let not_copied = error.downcast_ref::<FileKeyNotCopied>().unwrap_or_else(|| panic!("{error:#}"));
    assert_eq!(not_copied.recorded, first_id);
    assert!(error.to_string().contains("copy that instance's file.key here"), "{error:#}");

    // A key of its own, given: refused, naming which key is which and how to move to it.
    let error = second(&first, tempfile::tempdir().unwrap(), Some(OTHER_KEY)).await.err().expect("another key served");
    let other = error.downcast_ref::<FileKeyNotTheDeployments>().unwrap_or_else(|| panic!("{error:#}"));
    assert_eq!((other.key_id.as_str(), other.recorded.as_str()), (id_of(OTHER_KEY).as_str(), first_id.as_str()));
    for said in [format!("id {first_id}"), format!("id {}", id_of(OTHER_KEY)), "WATASU_FILE_KEY_NEXT".to_owned()] {
        assert!(error.to_string().contains(&said), "{said:?} not in {error:#}");
    }

    // The first's key copied: the second serves what the first stored.
    let copied = tempfile::tempdir().unwrap();
    std::fs::copy(&made, copied.path().join(FILE_KEY_FILE)).unwrap();
    let second = second(&first, copied, None).await.expect("the same key serves");
    let files = claimed_files(&first, [content(1), content(2)]).await;
    all_download(&files, &second).await;
    second.stop().await;
    first.stop().await;
}

async fn two_instances_starting_at_once_with_keys_of_their_own_do_not_both_serve(backend: Backend) {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let url = fresh_database(backend, dir.path()).await;
        let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        db.migrate().await.unwrap();
        db.close().await;
        let (a, b) = tokio::join!(
            TestApp::try_spawn_on(tempfile::tempdir().unwrap(), &url, |_| {}),
            TestApp::try_spawn_on(tempfile::tempdir().unwrap(), &url, |_| {}),
        );
        let (served, refused) = match (a, b) {
            (Ok(served), Err(refused)) | (Err(refused), Ok(served)) => (served, refused),
            (Ok(_), Ok(_)) => panic!("round {round}: two instances serve with two file keys"),
            (Err(a), Err(b)) => panic!("round {round}: neither started: {a:#} / {b:#}"),
        };
        let known = refused.downcast_ref::<FileKeyNotTheDeployments>().is_some()
            || refused.downcast_ref::<FileKeyNotCopied>().is_some();
        assert!(known, "round {round}: {refused:#}");
        served.stop().await;
    }
}

both_backends!(
    a_second_instance_with_a_file_key_of_its_own_refuses_to_start_before_any_file_exists,
    two_instances_starting_at_once_with_keys_of_their_own_do_not_both_serve,
);
