//! Uploads on the object store, shared by several instances: the database records the piece of
//! the one writer whose offset advance won, and an upload whose PATCHes alternate between two
//! instances (one database, one S3 store, no shared disk) completes with the source's digest.

use std::{io::Cursor, pin::Pin, sync::Arc};

use base64::{Engine, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};
use watasu::{
    services::{
        Services,
        uploads::{Patch, UploadError},
    },
    storage::{FileStore, ObjectFileStore},
    uploads::{Checksum, Metadata, NewUpload, Owner},
};

use super::{cut_after, pattern, sha256_hex};
use crate::{
    both_backends,
    file_stores::count_files,
    support::{Backend, TestApp, s3},
};

fn piece_name(offset: u64, writer: u8) -> String {
    format!("{offset:020}-{writer:016x}")
}

fn patch(offset: u64, body: Pin<Box<dyn AsyncRead + Send>>, checksum: Option<Checksum>) -> Patch {
    Patch { offset, content_length: None, checksum, body }
}

async fn two_advances_at_one_offset_record_exactly_one_piece(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner_id = app.create_sender("pieces-race@example.test", "Race").await;
    let repo = app.state.services.uploads.repo().clone();
    let new = NewUpload {
        public_id: watasu::secret::random_token().expose().to_owned(),
        owner: Owner::Sender(owner_id),
        storage_key: watasu::secret::random_token().expose().to_owned(),
        length: 1000,
        metadata: Metadata::parse(None).unwrap(),
    };
    let id = repo.insert(&new, u64::MAX).await.unwrap().unwrap();
    let mut winners = Vec::new();
    for round in 0..10u64 {
        let offset = round * 100;
        let race = |writer: u8| {
            let repo = repo.clone();
            let piece = piece_name(offset, writer);
            tokio::spawn(async move {
                let won = repo.advance(id, offset, 100, Some(&piece)).await.unwrap().is_some();
                won.then_some(piece)
            })
        };
        let (a, b) = (race(1), race(2));
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert!(a.is_some() != b.is_some(), "round {round}: exactly one advance wins ({a:?}, {b:?})");
        winners.extend(a.or(b));
    }
    assert_eq!(repo.pieces(id).await.unwrap(), winners, "only the winners' pieces, in offset order");
    assert_eq!(repo.find(&new.public_id, Owner::Sender(owner_id)).await.unwrap().unwrap().offset(), 1000);
}

async fn an_upload_whose_patches_alternate_between_two_instances_completes_on_the_object_store(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = Owner::Sender(app.create_sender("pieces-s3@example.test", "Scale").await);
    let server = s3::shared();
    let (store_a, bucket) = server.store();
    let store_b = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), server.builder()).unwrap();
    let instance = |store: ObjectFileStore| {
        let mut parts = app.state.services.parts().clone();
        parts.store = Arc::new(store);
        Services::new(parts).uploads
    };
    let (a, b) = (instance(store_a), instance(store_b));
    let content = pattern(900 * 1024);
    let id = a.create(owner, content.len() as u64, Metadata::parse(None).unwrap()).await.unwrap();

    let first = a.patch(owner, &id, patch(0, Box::pin(Cursor::new(content[..300 * 1024].to_vec())), None));
    assert_eq!(first.await.unwrap().offset, 300 * 1024);
    // Cut off after 200 KiB: what arrived is kept and recorded.
    let cut = b.patch(owner, &id, patch(300 * 1024, cut_after(content[300 * 1024..500 * 1024].to_vec()), None));
    assert_eq!(cut.await.unwrap().offset, 500 * 1024);
    let rest = content[500 * 1024..].to_vec();
    let wrong = Checksum::parse(&format!("sha256 {}", STANDARD.encode(Sha256::digest(b"other")))).unwrap();
    let refused = b.patch(owner, &id, patch(500 * 1024, Box::pin(Cursor::new(rest.clone())), Some(wrong)));
    assert!(matches!(refused.await, Err(UploadError::ChecksumMismatch)));
    let stale = a.patch(owner, &id, patch(0, Box::pin(Cursor::new(rest.clone())), None));
    assert!(matches!(stale.await, Err(UploadError::Conflict)));
    let last = a.patch(owner, &id, patch(500 * 1024, Box::pin(Cursor::new(rest)), None));
    assert_eq!(last.await.unwrap().offset, content.len() as u64);

    let row = b.finished(owner, &id).await.unwrap().expect("the upload is finished");
    assert_eq!(row.sha256, Some(sha256_hex(&content)));
    let reading = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), server.builder()).unwrap();
    let mut back = Vec::new();
    reading.open(&row.storage_key).await.unwrap().into_reader().read_to_end(&mut back).await.unwrap();
    assert!(back == content, "the stored file is the source");
    assert_eq!(count_files(&server.bucket_dir(&bucket)), 1, "only the file is left: no piece, recorded or refused");
}

both_backends!(
    two_advances_at_one_offset_record_exactly_one_piece,
    an_upload_whose_patches_alternate_between_two_instances_completes_on_the_object_store
);
