//! The `FileStore` contract, on the local disk (`::local`) and on a real S3-compatible server
//! (`::s3`, s3s-fs): each behaviour is written once and run on both stores.

use std::{
    path::{Path, PathBuf},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use watasu::storage::{Deleted, LocalFileStore, StoreError, SweptStore, object_store::PART_BYTES};

use crate::support::s3::{self, S3Server};

/// A store under test and the folder where its stored bytes end up.
struct Subject {
    store: Arc<dyn SweptStore>,
    files: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Subject {
    fn local() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(LocalFileStore::new(dir.path()).unwrap());
        Self { store, files: dir.path().to_owned(), _dir: Some(dir) }
    }

    fn s3() -> Self {
        Self::s3_on(s3::shared())
    }

    fn s3_on(server: &S3Server) -> Self {
        let (store, bucket) = server.store();
        Self { store: Arc::new(store), files: server.bucket_dir(&bucket), _dir: None }
    }

    /// Files anywhere under the store's folder.
    fn file_count(&self) -> usize {
        count_files(&self.files)
    }

    async fn read_all(&self, key: &str) -> Vec<u8> {
        let mut back = Vec::new();
        self.store.open(key).await.unwrap().into_reader().read_to_end(&mut back).await.unwrap();
        back
    }
}

/// Files anywhere under `dir` (an object store's bucket folder included).
pub(crate) fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| if entry.path().is_dir() { count_files(&entry.path()) } else { 1 })
        .sum()
}

fn reader(bytes: &'static [u8]) -> Pin<Box<dyn AsyncRead + Send>> {
    Box::pin(bytes)
}

/// Bytes that differ from part to part, so a misplaced part shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i / PART_BYTES) as u8).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn local() {
                super::$name(super::Subject::local()).await
            }
            #[tokio::test]
            async fn s3() {
                super::$name(super::Subject::s3()).await
            }
        }
    )*};
}

mod partials;

on_both_stores!(
    a_stored_file_reads_back_with_its_size_and_digest,
    content_over_the_cap_is_refused_and_leaves_nothing_stored,
    a_ranged_open_reads_only_its_range_and_reports_the_whole_size,
    a_range_across_parts_reads_exactly_the_asked_bytes,
    deleting_twice_reports_already_absent,
    deleting_a_key_never_stored_is_already_absent,
    a_key_that_is_not_ours_never_reaches_the_store,
    the_digest_is_of_the_bytes_that_streamed,
    content_cut_off_midway_is_refused_and_leaves_nothing_stored,
);

async fn a_stored_file_reads_back_with_its_size_and_digest(subject: Subject) {
    let stored = subject.store.put(reader(b"hello"), 10).await.unwrap();
    assert_eq!(stored.size_bytes, 5);
    assert_eq!(stored.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert_eq!(subject.read_all(&stored.key).await, b"hello");
    assert_eq!(subject.store.open(&stored.key).await.unwrap().size_bytes, 5);
    let empty = subject.store.put(reader(b""), 10).await.unwrap();
    assert_eq!((empty.size_bytes, subject.read_all(&empty.key).await), (0, Vec::new()));
}

async fn content_over_the_cap_is_refused_and_leaves_nothing_stored(subject: Subject) {
    let error = subject.store.put(reader(b"0123456789"), 9).await.unwrap_err();
    assert!(matches!(error, StoreError::TooLarge { limit: 9 }));
    assert_eq!(subject.file_count(), 0);
}

async fn a_ranged_open_reads_only_its_range_and_reports_the_whole_size(subject: Subject) {
    let stored = subject.store.put(reader(b"0123456789"), 10).await.unwrap();
    for (start, len, expected) in [(3, 4, &b"3456"[..]), (8, 100, b"89"), (10, 5, b""), (0, 0, b"")] {
        let opened = subject.store.open_range(&stored.key, start, len).await.unwrap();
        let size_bytes = opened.size_bytes;
        let mut back = Vec::new();
        opened.into_reader().read_to_end(&mut back).await.unwrap();
        assert_eq!((back.as_slice(), size_bytes), (expected, 10), "{start}+{len}");
    }
    assert!(matches!(subject.store.open_range(&"a".repeat(64), 0, 1).await, Err(StoreError::NotFound)));
}

async fn a_range_across_parts_reads_exactly_the_asked_bytes(subject: Subject) {
    let content = pattern(PART_BYTES + PART_BYTES / 2);
    let stored = subject.store.put(Box::pin(std::io::Cursor::new(content.clone())), u64::MAX).await.unwrap();
    let start = PART_BYTES - 3;
    let opened = subject.store.open_range(&stored.key, start as u64, 10).await.unwrap();
    let size_bytes = opened.size_bytes;
    let mut back = Vec::new();
    opened.into_reader().read_to_end(&mut back).await.unwrap();
    assert_eq!((back.as_slice(), size_bytes), (&content[start..start + 10], content.len() as u64));
}

async fn deleting_twice_reports_already_absent(subject: Subject) {
    let stored = subject.store.put(reader(b"x"), 10).await.unwrap();
    assert_eq!(subject.store.delete(&stored.key).await.unwrap(), Deleted::Removed);
    assert!(matches!(subject.store.open(&stored.key).await, Err(StoreError::NotFound)));
    assert_eq!(subject.store.delete(&stored.key).await.unwrap(), Deleted::AlreadyAbsent);
    assert_eq!(subject.file_count(), 0);
}

async fn deleting_a_key_never_stored_is_already_absent(subject: Subject) {
    assert_eq!(subject.store.delete(&"b".repeat(64)).await.unwrap(), Deleted::AlreadyAbsent);
}

async fn a_key_that_is_not_ours_never_reaches_the_store(subject: Subject) {
    for key in ["../../etc/passwd", "", "secret.key", &"A".repeat(64)] {
        assert!(matches!(subject.store.open(key).await, Err(StoreError::NotFound)), "{key}");
        assert!(matches!(subject.store.delete(key).await, Err(StoreError::NotFound)), "{key}");
    }
}

async fn the_digest_is_of_the_bytes_that_streamed(subject: Subject) {
    // Several parts on S3, whose own checksums (ETags) are not a SHA-256 of the content.
    let content = pattern(2 * PART_BYTES + 7);
    let stored = subject.store.put(Box::pin(std::io::Cursor::new(content.clone())), u64::MAX).await.unwrap();
    assert_eq!((stored.size_bytes, stored.sha256.as_str()), (content.len() as u64, sha256_hex(&content).as_str()));
    assert_eq!(stored.crc32, crc32fast::hash(&content), "the CRC-32 a ZIP entry needs, from the same pass");
    assert_eq!(sha256_hex(&subject.read_all(&stored.key).await), stored.sha256);
}

async fn content_cut_off_midway_is_refused_and_leaves_nothing_stored(subject: Subject) {
    let cut = Generated::new(PART_BYTES as u64 * 2, |_| {}).failing_at(PART_BYTES as u64 + 11);
    let error = subject.store.put(Box::pin(cut), u64::MAX).await.unwrap_err();
    assert!(matches!(error, StoreError::Content(_)), "{error:?}");
    assert_eq!(subject.file_count(), 0);
}

mod s3_only {
    use super::*;

    #[tokio::test]
    async fn a_64_mib_put_streams_as_a_multipart_upload() {
        let server = S3Server::start();
        let subject = Subject::s3_on(&server);
        let total: u64 = 64 * 1024 * 1024;
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (server_ref, seen_ref) = (&server, seen.clone());
        // Halfway through, parts must already be on the server: the content is uploaded while it
        // is read, never gathered in memory first.
        let content = Generated::new(total, move |offset| {
            if offset >= total / 2 && seen_ref.lock().unwrap().is_none() {
                *seen_ref.lock().unwrap() = Some(server_ref.pending_parts());
            }
        });
        let expected = sha256_hex(&Generated::bytes(0..total));
        let stored = subject.store.put(Box::pin(content), total).await.unwrap();
        let parts_halfway = seen.lock().unwrap().unwrap();
        assert!(parts_halfway >= 2, "{parts_halfway} parts on the server halfway through");
        assert_eq!((stored.size_bytes, stored.sha256.as_str()), (total, expected.as_str()));
        assert_eq!(server.pending_parts(), 0, "a completed upload leaves no parts");
        assert_eq!(sha256_hex(&subject.read_all(&stored.key).await), expected);
    }

    #[tokio::test]
    async fn a_put_over_the_cap_after_several_parts_aborts_the_upload() {
        let server = S3Server::start();
        let subject = Subject::s3_on(&server);
        let cap = 2 * PART_BYTES as u64 + 1;
        let content = Generated::new(3 * PART_BYTES as u64, |_| {});
        let error = subject.store.put(Box::pin(content), cap).await.unwrap_err();
        assert!(matches!(error, StoreError::TooLarge { limit } if limit == cap), "{error:?}");
        assert_eq!(subject.file_count(), 0);
        assert_eq!(server.pending_parts(), 0, "the aborted upload's parts are gone");
    }
}

/// `len` bytes of a fixed pattern made on the fly (no buffer of the whole), telling `at` each
/// offset it reaches; optionally failing at one offset like a cut connection.
struct Generated<F> {
    offset: u64,
    len: u64,
    fail_at: Option<u64>,
    at: F,
}

impl<F: FnMut(u64) + Unpin> Generated<F> {
    fn new(len: u64, at: F) -> Self {
        Self { offset: 0, len, fail_at: None, at }
    }

    fn failing_at(self, offset: u64) -> Self {
        Self { fail_at: Some(offset), ..self }
    }
}

impl Generated<fn(u64)> {
    fn bytes(range: std::ops::Range<u64>) -> Vec<u8> {
        range.map(|i| (i % 253) as u8).collect()
    }
}

impl<F: FnMut(u64) + Unpin> AsyncRead for Generated<F> {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        (this.at)(this.offset);
        let end = this.fail_at.unwrap_or(this.len).min(this.len);
        if this.fail_at.is_some_and(|fail| this.offset >= fail) {
            return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut")));
        }
        let step = (end - this.offset).min(buf.remaining() as u64).min(64 * 1024);
        buf.put_slice(&Generated::bytes(this.offset..this.offset + step));
        this.offset += step;
        Poll::Ready(Ok(()))
    }
}
