//! Unfinished multipart uploads of the object store: an upload whose process died (here: its task
//! aborted while its reader never ends) is aborted by the leftover sweep once its marker is older
//! than the minimum age, and its parts are gone from the server; a live upload writes its marker
//! again once the renewal interval has passed, and a fast one writes it once. Each test starts its
//! own s3s-fs, since it counts the parts the server holds.

use crate::support::Backend;
use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant, SystemTime},
};

use reqwest::Method;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use watasu::{
    lifecycle::{LeftoverReport, ShareGc},
    share::ShareEvents,
    storage::{ObjectFileStore, SweptStore, object_store::PART_BYTES},
};

use super::names;
use crate::{
    both_backends,
    lifecycle::quiet_app,
    support::{s3::S3Server, store_proxy::StoreProxy},
};

/// A reader that never ends and never wakes: the upload it feeds waits for ever.
struct Stalled;

impl AsyncRead for Stalled {
    fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Poll::Pending
    }
}

/// Waits until `done` holds; fails after a while.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn an_abandoned_multipart_upload_is_aborted_once_its_marker_is_old_enough(backend: Backend) {
    let app = quiet_app(backend).await;
    let server = S3Server::start();
    let bucket = server.create_bucket();
    let proxy = StoreProxy::start(&server.addr).await;
    let builder = server.builder().with_endpoint(proxy.endpoint());
    let store: Arc<dyn SweptStore> =
        Arc::new(ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), builder).unwrap());
    let gc = ShareGc::new(app.state.lifecycle.clone(), store.clone(), ShareEvents::new(app.db().clone()));
    let markers = server.bucket_dir(&bucket).join("files/.multipart");

    // A finished upload of several parts leaves neither parts nor a marker behind; faster than
    // the marker's renewal, it wrote the marker once, before its first part.
    let whole = vec![7u8; 3 * PART_BYTES + 1];
    store.put(Box::pin(std::io::Cursor::new(whole)), u64::MAX).await.unwrap();
    assert_eq!(server.pending_parts(), 0);
    assert!(!markers.exists() || names(&markers).is_empty(), "a finished upload keeps no marker");
    let requests = proxy.take_forwarded();
    let marker_writes =
        requests.iter().filter(|(method, path)| *method == Method::PUT && path.contains("/.multipart/"));
    assert_eq!(marker_writes.count(), 1, "the marker was written once: {requests:?}");

    // One full part sent, then the sender stalls and its process "dies".
    let uploading = store.clone();
    let task = tokio::spawn(async move {
        let content = std::io::Cursor::new(vec![1u8; PART_BYTES]).chain(Stalled);
        uploading.put(Box::pin(content), u64::MAX).await
    });
    until("the first part's arrival", || server.pending_parts() > 0).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let marker = names(&markers);
    assert_eq!(marker.len(), 1, "the abandoned upload has its marker");
    assert!(server.pending_parts() > 0, "its parts stay on the server");

    // Younger than an hour, it may still be running somewhere: left alone.
    assert_eq!(gc.remove_leftovers().await.unwrap(), LeftoverReport::default());
    assert!(server.pending_parts() > 0);

    let marker_file = markers.join(marker.first().unwrap());
    std::fs::File::options()
        .write(true)
        .open(&marker_file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(2 * 3600))
        .unwrap();
    let report = gc.remove_leftovers().await.unwrap();

    assert_eq!(report, LeftoverReport { multipart_uploads: 1, ..LeftoverReport::default() });
    assert_eq!(server.pending_parts(), 0, "the upload was aborted");
    assert!(names(&markers).is_empty(), "its marker is gone");
    assert_eq!(gc.remove_leftovers().await.unwrap(), LeftoverReport::default(), "nothing is left to sweep");
}

async fn an_upload_still_sending_parts_keeps_its_marker_young(backend: Backend) {
    let app = quiet_app(backend).await;
    let server = S3Server::start();
    let (store, bucket) = server.store();
    // The renewal shortened from minutes, so that it comes due between two parts.
    let renewal = Duration::from_millis(200);
    let store: Arc<dyn SweptStore> = Arc::new(store.renewing_markers_every(renewal));
    let gc = ShareGc::new(app.state.lifecycle.clone(), store.clone(), ShareEvents::new(app.db().clone()));
    let markers = server.bucket_dir(&bucket).join("files/.multipart");
    let (mut sender, received) = tokio::io::duplex(64 * 1024);
    let uploading = store.clone();
    let task = tokio::spawn(async move { uploading.put(Box::pin(received), u64::MAX).await });
    sender.write_all(&vec![1u8; PART_BYTES]).await.unwrap();
    until("the first part's arrival", || server.pending_parts() > 0).await;
    let marker = markers.join(names(&markers).first().expect("the upload has its marker"));
    // As if the first part had been sent two hours ago and the upload were slow.
    let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
    std::fs::File::options().write(true).open(&marker).unwrap().set_modified(two_hours_ago).unwrap();

    tokio::time::sleep(renewal).await;
    sender.write_all(&vec![2u8; PART_BYTES]).await.unwrap();
    let young = || std::fs::metadata(&marker).and_then(|m| m.modified()).is_ok_and(|at| at > two_hours_ago);
    until("the marker's renewal by the next part, the renewal due", young).await;

    assert_eq!(gc.remove_leftovers().await.unwrap(), LeftoverReport::default(), "a live upload is no leftover");
    drop(sender);
    let stored = task.await.unwrap().unwrap();
    assert_eq!(stored.size_bytes, 2 * PART_BYTES as u64, "the upload completes, nothing aborted");
    assert_eq!(server.pending_parts(), 0);
    assert!(names(&markers).is_empty(), "a finished upload keeps no marker");
}

both_backends!(
    an_abandoned_multipart_upload_is_aborted_once_its_marker_is_old_enough,
    an_upload_still_sending_parts_keeps_its_marker_young
);
