//! The partial-upload side of the `FileStore` contract (tus uploads): appends, cut appends, caps,
//! completion and removal, on the local store and on the object store; and, on the object store
//! alone, pieces of racing writers, of which only the recorded ones make the file.

use std::io::Cursor;

use watasu::storage::{Appended, Deleted, StoreError, object_store::PART_BYTES};

use super::{Generated, Subject, pattern, reader, sha256_hex};
use crate::support::s3::S3Server;

fn new_key() -> String {
    watasu::secret::random_token().expose().to_owned()
}

/// An upload's partial file as the service drives it: the offset it reached and the pieces the
/// database would have recorded.
struct Partial<'s> {
    subject: &'s Subject,
    key: String,
    offset: u64,
    pieces: Vec<String>,
}

impl<'s> Partial<'s> {
    async fn create(subject: &'s Subject) -> Self {
        let key = new_key();
        subject.store.create_partial(&key).await.unwrap();
        Self { subject, key, offset: 0, pieces: Vec::new() }
    }

    /// Appends at the reached offset and records what was stored, as a winning writer does.
    async fn append(&mut self, content: Vec<u8>, max_bytes: u64) -> Result<Appended, StoreError> {
        let appended = self
            .subject
            .store
            .append_partial(&self.key, self.offset, Box::pin(Cursor::new(content)), max_bytes)
            .await?;
        self.offset += appended.written;
        self.pieces.extend(appended.piece.clone());
        Ok(appended)
    }

    async fn complete(&self) -> watasu::storage::StoredFile {
        self.subject.store.complete_partial(&self.key, &self.pieces).await.unwrap()
    }
}

on_both_stores!(
    appends_then_complete_read_back_with_their_digest,
    a_cut_append_keeps_what_arrived,
    an_append_over_its_cap_leaves_nothing,
    completing_twice_gives_the_same_stored_file,
    deleting_a_partial_twice_reports_already_absent,
);

async fn appends_then_complete_read_back_with_their_digest(subject: Subject) {
    let mut partial = Partial::create(&subject).await;
    assert_eq!(partial.append(b"hel".to_vec(), 5).await.unwrap().written, 3);
    assert_eq!(partial.append(b"lo".to_vec(), 2).await.unwrap().written, 2);
    let stored = partial.complete().await;
    assert_eq!((stored.key.as_str(), stored.size_bytes), (partial.key.as_str(), 5));
    assert_eq!(stored.sha256, sha256_hex(b"hello"));
    assert_eq!(subject.read_all(&partial.key).await, b"hello");
    assert_eq!(subject.file_count(), 1, "only the completed file is left");
}

async fn a_cut_append_keeps_what_arrived(subject: Subject) {
    let mut partial = Partial::create(&subject).await;
    let files_before = subject.file_count();
    let cut_at_once = Generated::new(1000, |_| {}).failing_at(0);
    let nothing = subject.store.append_partial(&partial.key, 0, Box::pin(cut_at_once), 1000).await.unwrap();
    assert!(nothing.cut.is_some());
    assert_eq!((nothing.written, nothing.piece, subject.file_count()), (0, None, files_before));

    let cut = Generated::new(1000, |_| {}).failing_at(600);
    let appended = subject.store.append_partial(&partial.key, 0, Box::pin(cut), 1000).await.unwrap();
    assert!(appended.cut.is_some(), "the cut is reported");
    assert_eq!(appended.written, 600);
    partial.offset = appended.written;
    partial.pieces.extend(appended.piece);
    partial.append(Generated::bytes(600..1000), 400).await.unwrap();
    let stored = partial.complete().await;
    assert_eq!(stored.sha256, sha256_hex(&Generated::bytes(0..1000)));
    assert_eq!(stored.crc32, crc32fast::hash(&Generated::bytes(0..1000)));
    assert_eq!(subject.read_all(&partial.key).await, Generated::bytes(0..1000));
}

async fn an_append_over_its_cap_leaves_nothing(subject: Subject) {
    let mut partial = Partial::create(&subject).await;
    partial.append(b"ab".to_vec(), 10).await.unwrap();
    let files_before = subject.file_count();
    let error = partial.append(b"cdef".to_vec(), 3).await.unwrap_err();
    assert!(matches!(error, StoreError::TooLarge { limit: 3 }), "{error:?}");
    assert_eq!(subject.file_count(), files_before, "the refused append stored nothing");
    assert_eq!(partial.complete().await.sha256, sha256_hex(b"ab"));
    assert_eq!(subject.read_all(&partial.key).await, b"ab");
}

async fn completing_twice_gives_the_same_stored_file(subject: Subject) {
    let mut partial = Partial::create(&subject).await;
    partial.append(b"twice".to_vec(), 5).await.unwrap();
    let first = partial.complete().await;
    assert_eq!(partial.complete().await, first, "completing again digests the file again");
    assert_eq!(subject.read_all(&partial.key).await, b"twice");
}

async fn deleting_a_partial_twice_reports_already_absent(subject: Subject) {
    let mut partial = Partial::create(&subject).await;
    partial.append(b"x".to_vec(), 1).await.unwrap();
    assert_eq!(subject.store.delete_partial(&partial.key).await.unwrap(), Deleted::Removed);
    assert_eq!(subject.store.delete_partial(&partial.key).await.unwrap(), Deleted::AlreadyAbsent);
    assert_eq!(subject.file_count(), 0);
    assert!(matches!(subject.store.delete_partial("../x").await, Err(StoreError::NotFound)));
}

mod s3_only {
    use super::*;

    #[tokio::test]
    async fn two_writers_at_one_offset_keep_both_pieces_until_one_is_discarded() {
        let subject = Subject::s3();
        let mut partial = Partial::create(&subject).await;
        assert_eq!(subject.file_count(), 0, "an object store keeps nothing before the first bytes");
        partial.append(b"AAAA".to_vec(), 4).await.unwrap();
        let loser = subject.store.append_partial(&partial.key, 0, reader(b"BBBBBB"), 6).await.unwrap();
        let loser = loser.piece.expect("the other writer has its own piece");
        assert!(!partial.pieces.contains(&loser), "the pieces have different names");
        assert_eq!(subject.file_count(), 2, "neither writer overwrote the other");
        subject.store.discard_piece(&partial.key, &loser).await.unwrap();
        assert_eq!(subject.file_count(), 1);
        subject.store.discard_piece(&partial.key, &loser).await.unwrap();
        assert_eq!(partial.complete().await.sha256, sha256_hex(b"AAAA"));
        assert_eq!(subject.read_all(&partial.key).await, b"AAAA");
        assert_eq!(subject.file_count(), 1, "the pieces are gone once complete");
    }

    #[tokio::test]
    async fn completing_with_only_the_recorded_pieces_yields_only_their_bytes() {
        let subject = Subject::s3();
        let mut partial = Partial::create(&subject).await;
        partial.append(b"kept".to_vec(), 4).await.unwrap();
        // A writer that lost its advance, its piece never discarded (a crash): not recorded.
        subject.store.append_partial(&partial.key, 0, reader(b"lost"), 4).await.unwrap();
        partial.append(b"!".to_vec(), 1).await.unwrap();
        let stored = partial.complete().await;
        assert_eq!((stored.size_bytes, stored.sha256), (5, sha256_hex(b"kept!")));
        assert_eq!(subject.file_count(), 1, "unrecorded pieces go with the recorded ones");
    }

    #[tokio::test]
    async fn pieces_that_do_not_join_up_are_refused() {
        let subject = Subject::s3();
        let mut partial = Partial::create(&subject).await;
        partial.append(b"abcd".to_vec(), 4).await.unwrap();
        partial.offset += 1;
        partial.append(b"f".to_vec(), 1).await.unwrap();
        let error = subject.store.complete_partial(&partial.key, &partial.pieces).await.unwrap_err();
        assert!(matches!(error, StoreError::Io(_)), "{error:?}");
        assert!(matches!(subject.store.open(&partial.key).await, Err(StoreError::NotFound)));
        for bad in ["../../etc/passwd", "00000000000000000000"] {
            let error = subject.store.complete_partial(&partial.key, &[bad.to_owned()]).await.unwrap_err();
            assert!(matches!(error, StoreError::NotFound), "{bad}: {error:?}");
        }
    }

    #[tokio::test]
    async fn pieces_larger_than_a_part_complete_as_one_multipart_object() {
        let server = S3Server::start();
        let subject = Subject::s3_on(&server);
        let content = pattern(2 * PART_BYTES + 10);
        let mut partial = Partial::create(&subject).await;
        let (first, second) = content.split_at(PART_BYTES + 5);
        partial.append(first.to_vec(), u64::MAX).await.unwrap();
        partial.append(second.to_vec(), u64::MAX).await.unwrap();
        let stored = partial.complete().await;
        assert_eq!((stored.size_bytes, stored.sha256.as_str()), (content.len() as u64, sha256_hex(&content).as_str()));
        assert_eq!(sha256_hex(&subject.read_all(&partial.key).await), stored.sha256);
        assert_eq!(server.pending_parts(), 0, "the completed upload leaves no parts");
        assert_eq!(subject.file_count(), 1);
    }
}
