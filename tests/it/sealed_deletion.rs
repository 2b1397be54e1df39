//! Every path that deletes an encrypted file's bytes destroys its key first (issue 37): a share
//! ended now and collected, and a deletion case (where the keys are a step of their own, verified
//! and in the evidence, before the bytes). A copy of the stored bytes taken before and put back
//! afterwards cannot be opened; a store that cannot delete leaves bytes nobody can read.

use std::sync::Arc;

use watasu::{
    deletion::{CaseState, Interrupted, Outcome, Store as DeletionStore},
    maintenance::Trigger,
    on_db,
    storage::{ResumableStore, StoreError},
};

use crate::{
    deletion::fixtures::{admin_case, deletion_app, impatient_runner, populate, runner},
    file_requests::{SENDER, answered_request},
    sealed_files::{MARKER, Store, app_on, content, on_both_backends_and_stores, stored_files},
    support::{
        Backend, PASSWORD, TestApp, count, event_kinds,
        wrapped_store::{Call, Hook, Wrapped},
    },
};

/// The share's one file: its storage key.
async fn key_of(app: &TestApp, share_id: i64) -> String {
    on_db!(app.db(), |pool| {
        sqlx::query_scalar(
            "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        )
        .bind(share_id)
        .fetch_one(pool)
        .await
        .unwrap()
    })
}

async fn ending_a_share_now_destroys_the_key_before_the_bytes_and_a_copy_put_back_stays_unreadable(
    backend: Backend,
    store: Store,
) {
    let (app, dir) = app_on(backend, store, true).await;
    let sender = app.create_sender("end-now@example.test", "S").await;
    let share = app.fake_share().sender(sender).file("f.bin", content()).create().await;
    let key = key_of(&app, share.id).await;
    let (path, copy) = stored_files(&dir).remove(0);

    // The sender's "end now", then the collection it makes due.
    assert!(app.state.lifecycle.revoke(share.id).await.unwrap());
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert!(stored_files(&dir).is_empty(), "the bytes were deleted");
    let in_order = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                     WHERE s.id = $1 AND f.wrapped_key IS NULL AND f.key_destroyed_at IS NOT NULL
                       AND f.purged_at IS NOT NULL AND f.key_destroyed_at <= f.purged_at";
    assert_eq!(count(app.db(), in_order, share.id).await, 1, "the key went first, then the bytes");
    let kinds = event_kinds(&app, share.id).await;
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap_or_else(|| panic!("{kind}: {kinds:?}"));
    assert!(at("key_destroyed") < at("purged"), "the timeline says the key went before the bytes: {kinds:?}");

    // A backup brings the bytes back: they never open again.
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &copy).unwrap();
    assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)));
    assert!(matches!(app.state.store.open_range(&key, 1000, 100).await, Err(StoreError::NotFound)));
}

/// An app whose collector runs only when asked (ending the sender's shares does not make it
/// collect them, so the case finds their keys), and its files folder.
async fn case_app(backend: Backend) -> (TestApp, std::path::PathBuf) {
    let app = deletion_app(backend).await;
    assert!(app.state.config.settings.encrypt_files);
    let files = app.data_dir.path().join("files");
    (app, files)
}

/// Holds the case for `owner`, so that the app's own worker does not take it.
async fn held(app: &TestApp, case_id: i64, owner: &str) {
    let cases = app.state.services.deletion.cases();
    assert!(cases.claim(case_id, owner, std::time::Duration::from_secs(600)).await.unwrap());
}

async fn the_senders_timeline_says_the_key_was_destroyed_before_the_file_was_deleted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("timeline-key@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("f.bin", content()).create().await;
    assert!(app.state.lifecycle.revoke(share.id).await.unwrap());
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    let browser = app.sign_in("timeline-key@example.test", PASSWORD).await;

    for (lang, destroyed, deleted) in
        [("en", "key was destroyed", "deleted from the server"), ("ja", "鍵を破棄しました", "削除しました")]
    {
        let headers = [("Accept-Language", lang), ("Sec-Fetch-Site", "same-origin")];
        let page = browser.get_with(&format!("/shares/{}", share.id), &headers).await;
        let key = page.texts(".timeline li[data-kind=key_destroyed]").concat();
        assert!(key.contains(destroyed), "{lang}: {key}");
        let purged = page.texts(".timeline li[data-kind=purged]").concat();
        assert!(purged.contains(deleted), "{lang}: {purged}");
        let kinds = page.html();
        let selector = scraper::Selector::parse(".timeline li[data-kind]").unwrap();
        let kinds: Vec<_> = kinds.select(&selector).filter_map(|li| li.value().attr("data-kind")).collect();
        let at = |kind| kinds.iter().position(|k| *k == kind).unwrap();
        // The timeline reads oldest first.
        assert!(at("key_destroyed") < at("purged"), "{kinds:?}");
    }
}

async fn a_requests_delete_now_destroys_the_keys_before_the_bytes_and_a_copy_put_back_stays_unreadable(
    backend: Backend,
) {
    let (app, dir) = app_on(backend, Store::Local, true).await;
    let (request, _uploader) = answered_request(&app, &[("contract.pdf", MARKER)]).await;
    let (path, copy) = stored_files(&dir).remove(0);
    assert!(!copy.windows(MARKER.len()).any(|w| w == MARKER), "the request's file is stored encrypted");
    let key = key_of(&app, request.id).await;

    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender.get(&format!("/requests/{}", request.id)).await;
    let deleted =
        sender.post_form(&format!("/requests/{}/delete", request.id), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    // A pass of its own: the one the delete's answer started may still hold the runner.
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert!(stored_files(&dir).is_empty(), "deleted with the next pass");
    let in_order = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                     WHERE s.id = $1 AND f.wrapped_key IS NULL AND f.key_destroyed_at <= f.purged_at";
    assert_eq!(count(app.db(), in_order, request.id).await, 1, "the key went first, then the bytes");
    let kinds = event_kinds(&app, request.id).await;
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap_or_else(|| panic!("{kind}: {kinds:?}"));
    assert!(at("key_destroyed") < at("purged"), "{kinds:?}");

    std::fs::write(&path, &copy).unwrap();
    assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)));
}

/// The number of the sender's files whose key is still there.
async fn live_keys(app: &TestApp, owner: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1 AND wrapped_key IS NOT NULL", owner).await
}

async fn a_deletion_case_destroys_the_keys_as_a_verified_step_before_the_bytes(backend: Backend) {
    let (app, dir) = case_app(backend).await;
    let sender = populate(&app, "leaving-sealed@example.test").await;
    let files = sender.storage_keys.len() as i64;
    assert_eq!(live_keys(&app, sender.id).await, files, "the sender's files are stored encrypted");
    let copies = stored_files(&dir);

    let runner = runner(&app, "sealed-case");
    let case = admin_case(&runner, sender.id).await;
    held(&app, case.id, "sealed-case").await;
    runner.run_case(case.id).await.unwrap();

    let steps = app.state.services.deletion.cases().steps(case.id).await.unwrap();
    let keys = steps.iter().find(|s| s.store == DeletionStore::FileKeys).expect("a file keys step");
    assert_eq!((keys.outcome(), keys.found, keys.remaining), (Outcome::Deleted, Some(files), Some(0)), "{keys:?}");
    assert!(keys.verified_at.is_some());
    let order: Vec<_> = steps.iter().map(|s| s.store).collect();
    let at = |store| order.iter().position(|s| *s == store).unwrap();
    assert!(at(DeletionStore::FileKeys) < at(DeletionStore::StoredFiles), "{order:?}");
    let evidence = app.state.services.deletion.cases().evidence(case.id).await.unwrap();
    let written: Vec<_> = evidence.iter().map(|e| e.store).collect();
    let first = |store| written.iter().position(|s| *s == store).unwrap_or_else(|| panic!("{written:?}"));
    let (keys_at, bytes_at) = (first(DeletionStore::FileKeys), first(DeletionStore::StoredFiles));
    assert!(keys_at < bytes_at, "the keys' evidence comes first: {written:?}");

    // The bytes put back hold nothing readable: no key for them is left anywhere.
    for (path, bytes) in &copies {
        std::fs::write(path, bytes).unwrap();
        assert!(!bytes.windows(MARKER.len()).any(|w| w == MARKER));
    }
    let keys_left = count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1", sender.id).await;
    assert_eq!(keys_left, 0);
}

/// Every delete fails: the store is down for deleting.
struct DeletesFail;

#[async_trait::async_trait]
impl Hook for DeletesFail {
    async fn before(&self, call: Call) -> Result<(), StoreError> {
        match call {
            Call::Delete => Err(StoreError::Io(std::io::Error::other("the store is down"))),
            _ => Ok(()),
        }
    }
}

async fn with_the_store_failing_the_keys_are_destroyed_and_the_bytes_pending(backend: Backend) {
    let (app, dir) = case_app(backend).await;
    let sender = populate(&app, "store-down@example.test").await;
    let failing: Arc<dyn ResumableStore> = Wrapped::new(app.state.store.clone(), DeletesFail);
    let runner = impatient_runner(&app, "store-down", failing, 2);
    let case = admin_case(&runner, sender.id).await;
    held(&app, case.id, "store-down").await;
    runner.run_case(case.id).await.unwrap();

    let steps = app.state.services.deletion.cases().steps(case.id).await.unwrap();
    let step = |store| steps.iter().find(|s| s.store == store).unwrap();
    let keys = step(DeletionStore::FileKeys);
    assert_eq!((keys.outcome(), keys.remaining), (Outcome::Deleted, Some(0)), "{keys:?}");
    assert!(keys.verified_at.is_some(), "the keys' destruction was verified");
    let bytes = step(DeletionStore::StoredFiles);
    assert!(!bytes.outcome().is_done(), "the bytes are still to delete: {bytes:?}");
    assert!(bytes.remaining.unwrap_or(1) > 0, "the bytes still there were not taken for deleted: {bytes:?}");
    assert_eq!(live_keys(&app, sender.id).await, 0);
    assert!(!stored_files(&dir).is_empty(), "the store kept the bytes");
    for key in &sender.storage_keys {
        assert!(matches!(app.state.store.open(key).await, Err(StoreError::NotFound)), "a file opens without its key");
    }
}

async fn a_plaintext_files_collection_says_nothing_of_a_key(backend: Backend) {
    let (app, dir) = app_on(backend, Store::Local, false).await;
    let sender = app.create_sender("plain@example.test", "S").await;
    let share = app.fake_share().sender(sender).file("f.bin", content()).create().await;
    app.expire_share(share.id).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert!(stored_files(&dir).is_empty(), "the bytes were deleted");
    // No key was there to destroy: the timeline does not claim one was.
    let kinds = event_kinds(&app, share.id).await;
    assert!(kinds.ends_with(&["expired".into(), "purged".into()]), "{kinds:?}");
    assert!(!kinds.contains(&"key_destroyed".to_owned()), "{kinds:?}");
}

async fn a_key_that_arrives_after_the_keys_step_reopens_it_before_the_case_completes(backend: Backend) {
    let (app, _dir) = case_app(backend).await;
    let sender = populate(&app, "late-key@example.test").await;
    let stopping_after = |store| runner(&app, "late-key").interrupt_after(store);
    let case = admin_case(&stopping_after(DeletionStore::Backups), sender.id).await;
    held(&app, case.id, "late-key").await;
    let stopped = stopping_after(DeletionStore::Backups).run_case(case.id).await;
    assert!(stopped.is_err_and(|e| e.is::<Interrupted>()));
    assert_eq!(live_keys(&app, sender.id).await, 0);

    // A file with its key, written after the keys step had looked (as a request's uploader racing
    // the case would).
    let stored = app.state.store.put(Box::pin(&b"a late file\n"[..]), u64::MAX).await.unwrap();
    let sealed = stored.sealed.expect("stored encrypted");
    const INSERT: &str = "INSERT INTO files (owner_id, storage_key, original_name, content_type, size_bytes, sha256,
                                             sealing, wrapped_key, file_key_id)
                          VALUES ($1, $2, 'late.txt', 'text/plain', $3, $4, 'sealed-v1', $5, $6)";
    on_db!(app.db(), |pool| {
        let insert = sqlx::query(INSERT).bind(sender.id).bind(&stored.key).bind(stored.size_bytes as i64);
        let insert = insert.bind(&stored.sha256).bind(&sealed.wrapped).bind(&sealed.key_id);
        insert.execute(pool).await.unwrap().rows_affected()
    });
    assert_eq!(live_keys(&app, sender.id).await, 1);

    // The final look finds the key and runs the keys step again, before anything after it.
    let resumed = stopping_after(DeletionStore::FileKeys).run_case(case.id).await;
    let error = resumed.expect_err("the case completed with a key left");
    assert!(error.downcast_ref::<Interrupted>().is_some_and(|i| i.0 == DeletionStore::FileKeys), "{error:#}");
    assert_eq!(live_keys(&app, sender.id).await, 0, "the late key outlived its step");
    assert_eq!(runner(&app, "late-key").run_case(case.id).await.unwrap(), Some(CaseState::Completed));
    let steps = app.state.services.deletion.cases().steps(case.id).await.unwrap();
    let keys = steps.iter().find(|s| s.store == DeletionStore::FileKeys).expect("a file keys step");
    assert_eq!((keys.outcome(), keys.remaining), (Outcome::Deleted, Some(0)), "{keys:?}");
    assert!(keys.verified_at.is_some());
    assert!(matches!(app.state.store.open(&stored.key).await, Err(StoreError::NotFound)));
}

on_both_backends_and_stores!(ending_a_share_now_destroys_the_key_before_the_bytes_and_a_copy_put_back_stays_unreadable);

crate::both_backends!(
    a_requests_delete_now_destroys_the_keys_before_the_bytes_and_a_copy_put_back_stays_unreadable,
    the_senders_timeline_says_the_key_was_destroyed_before_the_file_was_deleted,
    a_deletion_case_destroys_the_keys_as_a_verified_step_before_the_bytes,
    with_the_store_failing_the_keys_are_destroyed_and_the_bytes_pending,
    a_plaintext_files_collection_says_nothing_of_a_key,
    a_key_that_arrives_after_the_keys_step_reopens_it_before_the_case_completes,
);
