//! Resumable uploads in the object store sent as the parts of one multipart upload, so that
//! completing one is a single request, not a second copy of the file. Which part holds which
//! bytes is the database's to say (the caller's); the store keeps a marker object
//! `PREFIX.part-KEY/multipart` holding the multipart upload's id beside the upload's pieces from
//! the upload's creation until it is completed, so removing the partial file (an ended upload, the
//! leftover sweep) aborts the multipart upload without asking the database. (The id is its body,
//! not its name: some stores keep an object's name in a file name of limited length.)

use ::object_store::{MultipartId, ObjectStore, PutPayload, multipart::PartId, path::Path as ObjectPath};
use bytes::Bytes;
use futures_util::TryStreamExt;

use super::{
    object_store::{ObjectFileStore, store_error},
    store::StoreError,
};

/// The name of the marker in an upload's pieces folder (no piece is named so).
const MARKER: &str = "multipart";

impl ObjectFileStore {
    /// The marker naming the multipart upload of the upload `key`.
    fn parts_marker(&self, key: &str) -> Result<ObjectPath, StoreError> {
        Ok(self.pieces_of(key).ok_or(StoreError::NotFound)?.child(MARKER))
    }

    /// Creates the multipart upload of `key`'s object and its marker; aborted again if the marker
    /// cannot be written, so no upload is left that nothing names.
    pub(super) async fn begin_upload_parts(&self, key: &str) -> Result<String, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let id = self.multipart.create_multipart(&path).await.map_err(store_error)?;
        let marker = self.parts_marker(key)?;
        if let Err(error) = self.objects.put(&marker, PutPayload::from(id.clone())).await {
            if let Err(abort) = self.multipart.abort_multipart(&path, &id).await {
                tracing::warn!(%abort, "aborting an unmarked multipart upload failed");
            }
            return Err(store_error(error));
        }
        Ok(id)
    }

    pub(super) async fn send_upload_part(
        &self,
        key: &str,
        id: &str,
        index: usize,
        bytes: Bytes,
    ) -> Result<String, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let id: MultipartId = id.to_owned();
        let part = self.multipart.put_part(&path, &id, index, PutPayload::from(bytes)).await.map_err(store_error)?;
        Ok(part.content_id)
    }

    pub(super) async fn read_upload_pieces(
        &self,
        key: &str,
        from: u64,
        pieces: &[String],
        into: &mut [u8],
    ) -> Result<(), StoreError> {
        let mut joined = std::pin::pin!(self.joined(key, pieces, from)?);
        let mut filled = 0;
        while let Some(chunk) = joined.try_next().await? {
            let end = filled + chunk.len();
            let Some(room) = into.get_mut(filled..end) else {
                return Err(StoreError::Io(std::io::Error::other("the pieces hold more than a part's front")));
            };
            room.copy_from_slice(&chunk);
            filled = end;
        }
        if filled != into.len() {
            return Err(StoreError::Io(std::io::Error::other("the pieces hold less than a part's front")));
        }
        Ok(())
    }

    /// Completes the upload, its marker removed after: an upload completed before (a crash after
    /// the request, another instance) answers the store's refusal, yet its object is there.
    pub(super) async fn complete_upload_parts(
        &self,
        key: &str,
        id: &str,
        parts: Vec<String>,
    ) -> Result<(), StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let parts = parts.into_iter().map(|content_id| PartId { content_id }).collect();
        if let Err(error) = self.multipart.complete_multipart(&path, &id.to_owned(), parts).await {
            match self.size_of(&path).await {
                Ok(_) => {}
                Err(StoreError::NotFound) => return Err(store_error(error)),
                Err(other) => return Err(other),
            }
        }
        match self.objects.delete(&self.parts_marker(key)?).await {
            Ok(()) | Err(::object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(store_error(error)),
        }
    }

    /// Aborts the multipart upload that `path`, an object in the pieces folder of `key`, names
    /// if it is the marker. One completed already may be refused (S3 forgets it; some stores deny
    /// it): its object being there says it is done with.
    pub(super) async fn abort_marked(&self, key: &str, path: &ObjectPath) -> Result<(), StoreError> {
        if path.filename() != Some(MARKER) {
            return Ok(());
        }
        let id: MultipartId = match self.objects.get(path).await {
            Ok(found) => String::from_utf8_lossy(&found.bytes().await.map_err(store_error)?).into_owned(),
            Err(::object_store::Error::NotFound { .. }) => return Ok(()),
            Err(error) => return Err(store_error(error)),
        };
        let object = self.path_of(key).ok_or(StoreError::NotFound)?;
        match self.multipart.abort_multipart(&object, &id).await {
            Ok(()) | Err(::object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => match self.size_of(&object).await {
                Ok(_) => Ok(()),
                Err(StoreError::NotFound) => Err(store_error(error)),
                Err(other) => Err(other),
            },
        }
    }
}
