//! Files stored encrypted, each under its own key (issue 37), on both stores and both databases:
//! no stored byte holds the plaintext, any range downloads as the plaintext's, a damaged segment
//! is never served as data, and once the GC destroyed the key even a copy of the stored bytes put
//! back cannot be read. Files stored plaintext (before, or with encryption off) still download.

use std::path::PathBuf;

use rand::{RngExt, SeedableRng, rngs::StdRng};
use watasu::{
    key_check::{FILE_KEY_FILE, FileKeyMissing, FileKeyWrong, load_file_keys},
    maintenance::Trigger,
    on_db,
    secret::SecretString,
    storage::StoreError,
};

use crate::{
    file_stores::count_files,
    support::{Backend, Browser, TestApp, TestShare, count, s3},
};

pub(crate) const MARKER: &[u8] = b"PLAINTEXT-MARKER-37";
/// STREAM's 64 KiB segments with their tags, after the 16-byte header.
const HEADER: usize = 16;
const SEGMENT_STORED: usize = 64 * 1024 + 16;

#[derive(Clone, Copy)]
pub(crate) enum Store {
    Local,
    S3,
}

/// An app on `store`, and the folder where that store's bytes end up.
pub(crate) async fn app_on(backend: Backend, store: Store, encrypt: bool) -> (TestApp, PathBuf) {
    match store {
        Store::Local => {
            let app = TestApp::spawn_with(backend, |s| s.encrypt_files = encrypt).await;
            let files = app.data_dir.path().join("files");
            (app, files)
        }
        Store::S3 => {
            let server = s3::shared();
            let bucket = server.create_bucket();
            let storage = server.storage_settings(&bucket);
            let app = TestApp::spawn_with(backend, |s| {
                s.storage = storage;
                s.encrypt_files = encrypt;
            })
            .await;
            (app, server.bucket_dir(&bucket))
        }
    }
}

/// 4½ segments of bytes that differ from place to place, the marker spread through them.
pub(crate) fn content() -> &'static [u8] {
    let mut bytes: Vec<u8> = (0..(4 * 64 * 1024 + 32 * 1024)).map(|i| (i % 251) as u8).collect();
    for at in (0..bytes.len() - MARKER.len()).step_by(10_000) {
        bytes[at..at + MARKER.len()].copy_from_slice(MARKER);
    }
    Box::leak(bytes.into_boxed_slice())
}

/// Every stored file under `dir` (the one object or file of a share), with its bytes.
pub(crate) fn stored_files(dir: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(stored_files(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            found.push((path, bytes));
        }
    }
    found
}

/// The command line's settings for the store `app` runs on: none for its data folder's.
pub(crate) fn store_args(app: &TestApp) -> Vec<String> {
    match app.state.config.settings.storage.location.as_deref().and_then(|at| at.strip_prefix("s3://")) {
        Some(bucket_and_prefix) => s3::shared().serve_args(bucket_and_prefix.split_once('/').unwrap().0),
        None => Vec::new(),
    }
}

/// A claimed share of one file, and the content it was sent with.
pub(crate) struct Shared {
    pub(crate) share: TestShare,
    pub(crate) browser: Browser,
    pub(crate) content: &'static [u8],
}

/// One claimed share per content, all from one sender.
pub(crate) async fn claimed_files(app: &TestApp, contents: impl IntoIterator<Item = &'static [u8]>) -> Vec<Shared> {
    let sender = app.create_sender("s@example.test", "S").await;
    let mut shared = Vec::new();
    for content in contents {
        let share = app.fake_share().sender(sender).recipient("r@example.test").file("f.bin", content).create().await;
        let (browser, csrf) = app.granted_browser(&share).await;
        assert_eq!(browser.claim(&share.token, &csrf).await.status(), 303);
        shared.push(Shared { share, browser, content });
    }
    shared
}

async fn claimed(app: &TestApp, content: &'static [u8]) -> (TestShare, Browser) {
    let Shared { share, browser, .. } = claimed_files(app, [content]).await.remove(0);
    (share, browser)
}

/// The share's one file: its id, storage key and how its bytes are stored.
async fn file_of(app: &TestApp, share_id: i64) -> (i64, String, String) {
    on_db!(app.db(), |pool| {
        sqlx::query_as(
            "SELECT f.id, f.storage_key, f.sealing FROM shares s JOIN files f ON f.handover_id = s.handover_id
              WHERE s.id = $1",
        )
        .bind(share_id)
        .fetch_one(pool)
        .await
        .unwrap()
    })
}

/// What a response's body yielded before it ended, and whether it ended with an error (a cut).
async fn received(mut response: reqwest::Response) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => return (bytes, false),
            Err(_) => return (bytes, true),
        }
    }
}

async fn no_stored_byte_holds_the_plaintext_and_random_ranges_download_as_it(backend: Backend, store: Store) {
    let (app, dir) = app_on(backend, store, true).await;
    let content = content();
    let (share, browser) = claimed(&app, content).await;
    assert_eq!(file_of(&app, share.id).await.2, "sealed-v1");
    let stored = stored_files(&dir);
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].1.windows(MARKER.len()).any(|w| w == MARKER), "the plaintext marker is in a stored byte");

    let mut rng = StdRng::seed_from_u64(37);
    for _ in 0..12 {
        let start = rng.random_range(0..content.len());
        let end = rng.random_range(start..content.len());
        let range = format!("bytes={start}-{end}");
        let response = browser.fetch_file(&share.token, &[("Range", &range)]).await;
        assert_eq!(response.status(), 206, "{range}");
        assert_eq!(response.bytes().await.unwrap().as_ref(), &content[start..=end], "{range}");
    }
    let whole = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(whole.bytes().await.unwrap().as_ref(), content);
}

async fn a_flipped_byte_gives_the_damaged_page_before_the_first_byte_and_a_cut_after_it(
    backend: Backend,
    store: Store,
) {
    let (app, dir) = app_on(backend, store, true).await;
    // Past the first batch a download opens before its first byte (at most 1 MiB of segments).
    let content: &'static [u8] = Box::leak([content(), content(), content(), content(), content()].concat().into());
    let (share, browser) = claimed(&app, content).await;
    let (path, original) = stored_files(&dir).remove(0);

    let mut damaged = original.clone();
    damaged[HEADER + 100] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    let page = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(page.status(), 500);
    let body = page.text().await.unwrap();
    assert!(body.contains("このファイルは破損しています") || body.contains("This file is damaged"), "{body}");

    let mut damaged = original.clone();
    let damaged_segment = 20;
    damaged[HEADER + damaged_segment * SEGMENT_STORED + 100] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    // The head may go out with the first bytes or not at all before the cut: either is a cut.
    let (bytes, cut) = match browser.client.get(browser.url(&format!("/s/{}/file", share.token))).send().await {
        Ok(response) => {
            assert_eq!(response.status(), 200);
            received(response).await
        }
        Err(_) => (Vec::new(), true),
    };
    assert!(cut, "the response ended normally after a damaged segment");
    assert!(bytes.len() <= damaged_segment * 64 * 1024, "bytes past the damaged segment were sent: {}", bytes.len());
    assert_eq!(bytes, &content[..bytes.len()], "wrong bytes were sent");
}

async fn after_the_gc_a_copy_of_the_stored_bytes_put_back_cannot_be_read(backend: Backend, store: Store) {
    let (app, dir) = app_on(backend, store, true).await;
    let (share, _browser) = claimed(&app, content()).await;
    let (path, copy) = stored_files(&dir).remove(0);
    let (_, key, _) = file_of(&app, share.id).await;
    assert!(app.state.store.open(&key).await.is_ok());

    app.consumed_ago(share.id, 2 * 24 * 3600).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(count_files(&dir), 0, "the bytes were deleted");
    let destroyed = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                      WHERE s.id = $1 AND f.wrapped_key IS NULL AND f.key_destroyed_at IS NOT NULL
                        AND f.purged_at IS NOT NULL";
    assert_eq!(count(app.db(), destroyed, share.id).await, 1, "the key was destroyed and the file purged");

    // A backup brings the bytes back: without the key they stay unreadable.
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &copy).unwrap();
    assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)));
}

async fn a_plaintext_file_still_downloads_whole_and_in_ranges(backend: Backend, store: Store) {
    let (app, dir) = app_on(backend, store, false).await;
    let content = content();
    let (share, browser) = claimed(&app, content).await;
    assert_eq!(file_of(&app, share.id).await.2, "plaintext");
    assert_eq!(stored_files(&dir)[0].1, content, "stored as it was sent");
    let whole = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(whole.bytes().await.unwrap().as_ref(), content);
    let range = browser.fetch_file(&share.token, &[("Range", "bytes=70000-140000")]).await;
    assert_eq!(range.status(), 206);
    assert_eq!(range.bytes().await.unwrap().as_ref(), &content[70000..=140000]);
}

async fn a_file_purged_outside_the_gc_keeps_no_key(backend: Backend) {
    // As the scanner purges a refused file: the bytes deleted, then the row marked purged.
    let (app, dir) = app_on(backend, Store::Local, true).await;
    let (share, _browser) = claimed(&app, content()).await;
    let (file_id, key, _) = file_of(&app, share.id).await;
    let (path, copy) = stored_files(&dir).remove(0);
    app.state.store.delete(&key).await.unwrap();
    assert!(app.state.lifecycle.mark_file_purged(file_id).await.unwrap());
    let destroyed = "SELECT count(*) FROM files WHERE id = $1 AND wrapped_key IS NULL AND key_destroyed_at IS NOT NULL";
    assert_eq!(count(app.db(), destroyed, file_id).await, 1, "a purged file kept its key");

    std::fs::write(&path, &copy).unwrap();
    assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)));
}

async fn start_up_refuses_a_file_key_other_than_the_encrypted_files_were_stored_under(backend: Backend) {
    let (app, _dir) = app_on(backend, Store::Local, true).await;
    let (share, _browser) = claimed(&app, content()).await;
    assert_eq!(file_of(&app, share.id).await.2, "sealed-v1");
    assert!(load_file_keys(&app.state.config, app.db()).await.is_ok(), "the key they were stored under");

    let mut other = app.state.config.clone();
    other.settings.file_key = Some(SecretString::new("cd".repeat(32)));
    let error = load_file_keys(&other, app.db()).await.unwrap_err();
    let wrong = error.downcast_ref::<FileKeyWrong>().unwrap_or_else(|| panic!("{error:#}"));
    assert_eq!((wrong.origin.as_str(), wrong.files), ("WATASU_FILE_KEY", 1));

    std::fs::remove_file(app.data_dir.path().join(FILE_KEY_FILE)).unwrap();
    let error = load_file_keys(&app.state.config, app.db()).await.unwrap_err();
    let missing = error.downcast_ref::<FileKeyMissing>().unwrap_or_else(|| panic!("{error:#}"));
    assert_eq!(missing.files, 1);
    assert!(!app.data_dir.path().join(FILE_KEY_FILE).exists(), "a new key was made over encrypted files");
}

crate::both_backends!(
    a_file_purged_outside_the_gc_keeps_no_key,
    start_up_refuses_a_file_key_other_than_the_encrypted_files_were_stored_under,
);

macro_rules! on_both_backends_and_stores {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            use crate::support::Backend;
            use crate::sealed_files::Store;
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite_local() {
                super::$name(Backend::Sqlite, Store::Local).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres_local() {
                super::$name(Backend::Postgres, Store::Local).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite_s3() {
                super::$name(Backend::Sqlite, Store::S3).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres_s3() {
                super::$name(Backend::Postgres, Store::S3).await
            }
        }
    )+};
}

pub(crate) use on_both_backends_and_stores;

on_both_backends_and_stores!(
    no_stored_byte_holds_the_plaintext_and_random_ranges_download_as_it,
    a_flipped_byte_gives_the_damaged_page_before_the_first_byte_and_a_cut_after_it,
    after_the_gc_a_copy_of_the_stored_bytes_put_back_cannot_be_read,
    a_plaintext_file_still_downloads_whole_and_in_ranges,
);
