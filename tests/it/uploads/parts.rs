//! Uploads on the object store sent as the parts of one multipart upload: PATCHes of any size,
//! alternating between two instances (one database, one store) and one of them cut off, make the
//! source's bytes and digest; completing is one request with no piece read back and no copy of
//! the whole file; one PATCH of several parts sends the next while the one before is in flight and
//! records only what landed in order (an earlier part failing after a later one was stored leaves
//! the offset at the earlier part); and the multipart upload of an upload that ends, expires or is
//! left without a row is aborted. Each test starts its own s3s-fs, since it counts what the server holds.

use std::{
    io::Cursor,
    pin::Pin,
    sync::Arc,
    time::{Duration, SystemTime},
};

use object_store::RetryConfig;
use reqwest::Method;
use tokio::io::{AsyncRead, AsyncReadExt};
use watasu::{
    lifecycle::{LeftoverReport, ShareGc},
    maintenance::Trigger,
    services::{
        Services,
        uploads::{Patch, UploadError, Uploads},
    },
    share::ShareEvents,
    storage::{FileStore, ObjectFileStore, SweptStore},
    uploads::{Metadata, Owner, parts::part_bytes},
};

use super::{cut_after, pattern, sha256_hex};
use crate::{
    both_backends,
    file_stores::count_files,
    support::{Backend, TestApp, s3::S3Server, store_proxy::StoreProxy},
};

const MIB: usize = 1024 * 1024;

fn body(bytes: &[u8]) -> Pin<Box<dyn AsyncRead + Send>> {
    Box::pin(Cursor::new(bytes.to_vec()))
}

fn patch(offset: usize, body: Pin<Box<dyn AsyncRead + Send>>) -> Patch {
    Patch { offset: offset as u64, content_length: None, checksum: None, body }
}

/// The upload service of an instance of its own over `store`, sharing the app's database.
fn instance(app: &TestApp, store: ObjectFileStore) -> Uploads {
    let mut parts = app.state.services.parts().clone();
    parts.store = Arc::new(store);
    Services::new(parts).uploads
}

/// The store on `bucket` of `server`, reached at `endpoint`.
fn store_at(server: &S3Server, bucket: &str, endpoint: String) -> ObjectFileStore {
    ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), server.builder().with_endpoint(endpoint)).unwrap()
}

/// Ages every file below `dir` by two hours, past the leftover sweep's minimum age.
fn age_all(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.path().is_dir() {
            age_all(&entry.path());
        } else {
            let file = std::fs::File::options().write(true).open(entry.path()).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(2 * 3600)).unwrap();
        }
    }
}

async fn patches_of_any_size_through_two_instances_complete_in_one_request_without_a_copy(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = Owner::Sender(app.create_sender("parts-sizes@example.test", "Parts").await);
    let server = S3Server::start();
    let bucket = server.create_bucket();
    let proxy = StoreProxy::start(&server.addr).await;
    let a = instance(&app, store_at(&server, &bucket, proxy.endpoint()));
    let b = instance(&app, store_at(&server, &bucket, proxy.endpoint()));
    let content = pattern(24 * MIB + 1000);
    let id = a.create(owner, content.len() as u64, Metadata::parse(None).unwrap()).await.unwrap();

    // A tiny PATCH; 5 MiB - 1; 5 MiB + 3, cut off after 2 MiB and resumed on the other
    // instance; 12 MiB; and what brings the offset to the start of the fourth part.
    let (tiny, odd) = (7, 5 * MIB + 6);
    let steps = [
        (&a, 0, tiny, false),
        (&b, tiny, odd, false),
        (&a, odd, odd + 2 * MIB, true),
        (&b, odd + 2 * MIB, odd + 5 * MIB + 3, false),
        (&a, 10 * MIB + 9, 22 * MIB + 9, false),
        (&b, 22 * MIB + 9, 24 * MIB, false),
    ];
    for (uploads, from, to, cut) in steps {
        let sent = if cut { cut_after(content[from..to].to_vec()) } else { body(&content[from..to]) };
        let progress = uploads.patch(owner, &id, patch(from, sent)).await.unwrap();
        assert_eq!(progress.offset, to as u64, "a PATCH, cut or not, keeps what arrived");
    }
    let _ = proxy.take_forwarded();
    let last = a.patch(owner, &id, patch(24 * MIB, body(&content[24 * MIB..]))).await.unwrap();
    assert_eq!(last.offset, content.len() as u64);

    let requests = proxy.take_forwarded();
    let object = format!("/{bucket}/files/");
    let reads = requests.iter().filter(|(method, path)| *method == Method::GET && path.starts_with(&object));
    assert_eq!(reads.count(), 0, "completing read nothing back: {requests:?}");
    let whole_puts = requests.iter().filter(|(method, path)| {
        *method == Method::PUT && path.starts_with(&object) && !path.contains("uploadId") && !path.contains(".part-")
    });
    assert_eq!(whole_puts.count(), 0, "no whole file was written: {requests:?}");
    let row = b.finished(owner, &id).await.unwrap().expect("the upload is finished");
    assert_eq!(row.sha256, Some(sha256_hex(&content)));
    assert_eq!(row.crc32, Some(i64::from(crc32fast::hash(&content))));
    let mut back = Vec::new();
    let reading = store_at(&server, &bucket, format!("http://{}", server.addr));
    reading.open(&row.storage_key).await.unwrap().into_reader().read_to_end(&mut back).await.unwrap();
    assert!(back == content, "the stored file is the source");
    assert_eq!(count_files(&server.bucket_dir(&bucket)), 1, "only the file is left: no piece, no marker");
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (0, 0), "the multipart upload completed");
}

async fn a_patch_of_several_parts_records_only_what_landed_in_order(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = Owner::Sender(app.create_sender("parts-order@example.test", "Parts").await);
    let server = S3Server::start();
    let bucket = server.create_bucket();
    let proxy = StoreProxy::start(&server.addr).await;
    // Few retries, as the server's own store has (a refused part fails its PATCH in a second).
    let retries = RetryConfig { max_retries: 1, ..RetryConfig::default() };
    let builder = server.builder().with_endpoint(proxy.endpoint()).with_retry(retries);
    let uploads = instance(&app, ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), builder).unwrap());
    let part = part_bytes(32 * MIB as u64 + 1000) as usize;
    let content = pattern(4 * part + 1000);
    let id = uploads.create(owner, content.len() as u64, Metadata::parse(None).unwrap()).await.unwrap();

    // Parts 1 and 2 go out together and part 3 once part 1 has landed; the store answers part 2
    // only after it stored part 3. Were part 3 not sent while part 2 is in flight, this would hang.
    proxy.fail_part_after(Some((2, 3)));
    let whole = tokio::time::timeout(Duration::from_secs(120), uploads.patch(owner, &id, patch(0, body(&content))));
    let failed = whole.await.expect("part 3 was sent while part 2 was still in flight");
    assert!(matches!(failed, Err(UploadError::Store(_))), "the failed part fails the PATCH: {failed:?}");
    assert_eq!(proxy.stored_parts(), [1, 3], "part 3 was stored before part 2 failed");
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (1, 2));
    let progress = uploads.progress(owner, &id).await.unwrap();
    assert_eq!(progress.offset, part as u64, "only the part before the failed one is recorded");

    proxy.fail_part_after(None);
    let resumed = uploads.patch(owner, &id, patch(part, body(&content[part..]))).await.unwrap();
    assert_eq!(resumed.offset, content.len() as u64);
    let mut sent_again = proxy.stored_parts().split_off(2);
    sent_again.sort_unstable();
    assert_eq!(sent_again, [2, 3, 4, 5], "the resumed PATCH sent every part from the failed one on");
    let row = uploads.finished(owner, &id).await.unwrap().expect("the upload is finished");
    assert_eq!(row.sha256, Some(sha256_hex(&content)));
    let mut back = Vec::new();
    let reading = store_at(&server, &bucket, format!("http://{}", server.addr));
    reading.open(&row.storage_key).await.unwrap().into_reader().read_to_end(&mut back).await.unwrap();
    assert!(back == content, "the stored file is the source: part 3 sent twice is stored once");
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (0, 0), "the multipart upload completed");
}

async fn an_ended_or_expired_uploads_multipart_upload_is_aborted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner_id = app.create_sender("parts-ended@example.test", "Parts").await;
    let owner = Owner::Sender(owner_id);
    let server = S3Server::start();
    let (store, bucket) = server.store();
    let uploads = instance(&app, store_at(&server, &bucket, format!("http://{}", server.addr)));
    let content = pattern(9 * MIB);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = uploads.create(owner, 20 * MIB as u64, Metadata::parse(None).unwrap()).await.unwrap();
        assert_eq!(uploads.patch(owner, &id, patch(0, body(&content))).await.unwrap().offset, 9 * MIB as u64);
        ids.push(id);
    }
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (2, 2), "one part each is sent");

    uploads.terminate(owner, &ids[0]).await.unwrap();
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (1, 1), "the ended upload's is aborted");

    uploads.repo().expire_all_of(owner_id).await.unwrap();
    let store: Arc<dyn SweptStore> = Arc::new(store);
    let gc = ShareGc::new(app.state.lifecycle.clone(), store, ShareEvents::new(app.db().clone()));
    assert_eq!(gc.collect(100, Trigger::Cli).await.unwrap().uploads, 1);
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (0, 0), "the expired upload's is aborted");
    assert_eq!(count_files(&server.bucket_dir(&bucket)), 0, "no piece or marker is left");
}

async fn a_multipart_upload_no_row_names_is_aborted_by_the_leftover_sweep(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let server = S3Server::start();
    let (store, bucket) = server.store();
    let store: Arc<dyn SweptStore> = Arc::new(store);
    let gc = ShareGc::new(app.state.lifecycle.clone(), store.clone(), ShareEvents::new(app.db().clone()));
    // A creation whose process died before its row recorded the multipart upload it began.
    let key = watasu::secret::random_token().expose().to_owned();
    let multipart_id = store.begin_parts(&key).await.unwrap().expect("the object store takes parts");
    store.put_part(&key, &multipart_id, 0, vec![1u8; MIB].into()).await.unwrap();
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (1, 1));
    assert_eq!(gc.remove_leftovers().await.unwrap(), LeftoverReport::default(), "younger than an hour: left alone");

    age_all(&server.bucket_dir(&bucket));
    let report = gc.remove_leftovers().await.unwrap();

    assert_eq!(report, LeftoverReport { orphan_files: 1, ..LeftoverReport::default() });
    assert_eq!((server.uploads_in_progress(), server.pending_parts()), (0, 0), "the upload was aborted");
    assert_eq!(count_files(&server.bucket_dir(&bucket)), 0, "its marker is gone");
}

both_backends!(
    patches_of_any_size_through_two_instances_complete_in_one_request_without_a_copy,
    a_patch_of_several_parts_records_only_what_landed_in_order,
    an_ended_or_expired_uploads_multipart_upload_is_aborted,
    a_multipart_upload_no_row_names_is_aborted_by_the_leftover_sweep
);
