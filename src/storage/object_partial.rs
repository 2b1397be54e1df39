//! Resumable uploads in the object store, shared by every instance. Each append is a *piece*: a
//! whole object `PREFIX.part-KEY/<start offset, 20 digits>-<16 random hex>`, unique to its writer,
//! so two instances racing at one offset never overwrite each other; the database records the
//! pieces of the writer whose offset advance won. Completing streams the recorded pieces in order
//! into the object `PREFIX KEY` and removes the pieces. An upload sent as parts (`object_parts`)
//! keeps as pieces only what its PATCHes left short of a part.

use std::{io, pin::Pin};

use ::object_store::{ObjectStore, path::Path as ObjectPath};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt, stream::BoxStream};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{
    Digester,
    object_store::{ObjectFileStore, store_error},
    store::{Appended, CHUNK, Content, Deleted, PARTIAL_PREFIX, ResumableStore, StoreError, StoredFile, Through},
};
use crate::secret::random_token;

/// Digits of a piece's start offset: any u64, zero-padded so names sort by offset.
const OFFSET_DIGITS: usize = 20;
/// Random hex after the offset, unique per writer.
const NONCE_DIGITS: usize = 16;

impl ObjectFileStore {
    /// The folder of an upload's pieces, or `None` for anything that is not one of our keys.
    pub(super) fn pieces_of(&self, key: &str) -> Option<ObjectPath> {
        self.path_of(key)?;
        Some(ObjectPath::from(format!("{}{PARTIAL_PREFIX}{key}", self.prefix)))
    }

    /// The object of one piece; `NotFound` for a key or piece name that is not ours.
    fn piece_path(&self, key: &str, piece: &str) -> Result<ObjectPath, StoreError> {
        piece_start(piece).ok_or(StoreError::NotFound)?;
        Ok(self.pieces_of(key).ok_or(StoreError::NotFound)?.child(piece))
    }

    /// Writes the pieces one after the other into `path` through `through`, checking they join
    /// up without a gap; answers the digest of what was written.
    async fn assemble(
        &self,
        path: &ObjectPath,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<Digester, StoreError> {
        let joined = self.joined(key, pieces, 0)?;
        let reader = tokio_util::io::StreamReader::new(joined.map_err(io::Error::other));
        self.put_at(path, through(Box::pin(reader)), u64::MAX).await.map_err(|error| match error {
            // The pieces' own failure, carried through the reader.
            StoreError::Content(io) => match io.into_inner().map(|inner| inner.downcast::<StoreError>()) {
                Some(Ok(inner)) => *inner,
                Some(Err(other)) => StoreError::Io(io::Error::other(other)),
                None => StoreError::Io(io::Error::other("reading a piece failed")),
            },
            other => other,
        })
    }

    /// The bytes of the pieces in order from offset `from`, GET by GET; an error where a piece
    /// does not start where the one before ended or yields other than its size.
    pub(super) fn joined(
        &self,
        key: &str,
        pieces: &[String],
        from: u64,
    ) -> Result<impl Stream<Item = Result<Bytes, StoreError>> + Send + '_, StoreError> {
        let paths = pieces.iter().map(|piece| self.piece_path(key, piece)).collect::<Result<Vec<_>, _>>()?;
        let pieces: Vec<_> = pieces.iter().zip(paths).map(|(piece, path)| (piece_start(piece), path)).collect();
        let state = Joining { pieces: pieces.into_iter(), current: None, offset: from };
        Ok(futures_util::stream::try_unfold(state, move |mut state| async move {
            loop {
                if let Some((bytes, end)) = &mut state.current {
                    match bytes.try_next().await.map_err(store_error)? {
                        Some(chunk) => {
                            state.offset += chunk.len() as u64;
                            if state.offset > *end {
                                return Err(broken("a piece is longer than its object"));
                            }
                            return Ok(Some((chunk, state)));
                        }
                        None if state.offset != *end => return Err(broken("a piece ended before its size")),
                        None => state.current = None,
                    }
                }
                let Some((start, path)) = state.pieces.next() else { return Ok(None) };
                if start != Some(state.offset) {
                    return Err(broken("a piece does not start where the one before ended"));
                }
                let result = self.objects.get(&path).await.map_err(store_error)?;
                let end = state.offset + result.meta.size;
                state.current = Some((result.into_stream(), end));
            }
        }))
    }

    /// Joins the pieces through `through` into the object of `key` unless it exists already, then
    /// removes every piece: the digest of what was written, or `None` when another completer (or
    /// an earlier attempt) had joined them.
    async fn join(&self, key: &str, pieces: &[String], through: Through) -> Result<Option<Digester>, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let written = match self.size_of(&path).await {
            Ok(_) => None,
            Err(StoreError::NotFound) => match self.assemble(&path, key, pieces, through).await {
                // Another completer finished first and removed the pieces under this one.
                Err(StoreError::NotFound) => None,
                other => Some(other?),
            },
            Err(error) => return Err(error),
        };
        self.delete_partial(key).await?;
        Ok(written)
    }

    /// The digest of a stored object, read back.
    async fn digest_object(&self, path: &ObjectPath) -> Result<Digester, StoreError> {
        let mut bytes = self.objects.get(path).await.map_err(store_error)?.into_stream();
        let mut digester = Digester::default();
        while let Some(chunk) = bytes.try_next().await.map_err(store_error)? {
            digester.update(&chunk);
        }
        Ok(digester)
    }
}

#[async_trait::async_trait]
impl ResumableStore for ObjectFileStore {
    /// The object store keeps nothing until the first bytes arrive; only the key is checked.
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.pieces_of(key).map(drop).ok_or(StoreError::NotFound)
    }

    /// Stores what `content` yields as a new piece starting at `offset`. A read error ends the
    /// piece, keeping what arrived (`cut`); nothing arrived, no piece; over `max_bytes`, no piece.
    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        mut content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError> {
        let piece = format!("{offset:0width$}-{}", &random_token().expose()[..NONCE_DIGITS], width = OFFSET_DIGITS);
        let path = self.piece_path(key, &piece)?;
        // Read before creating anything, so an empty or at once cut body leaves no object.
        let mut first = vec![0u8; CHUNK];
        let read = match content.read(&mut first).await {
            Ok(read) => read,
            Err(cut) => return Ok(Appended { written: 0, cut: Some(cut), piece: None }),
        };
        if read == 0 {
            return Ok(Appended { written: 0, cut: None, piece: None });
        }
        first.truncate(read);
        let cut = std::sync::Mutex::new(None);
        let rest = UntilCut { inner: content, cut: &cut };
        let written = self.put_at(&path, Box::pin(io::Cursor::new(first).chain(rest)), max_bytes).await?.size();
        Ok(Appended { written, cut: cut.into_inner().unwrap_or_else(|e| e.into_inner()), piece: Some(piece) })
    }

    /// Streams the recorded pieces into the object of `key` and removes every piece. Idempotent:
    /// once the object exists it is digested again (another instance may have completed it).
    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError> {
        let digester = match self.join(key, pieces, Box::new(|plain| plain)).await? {
            Some(written) => written,
            None => self.digest_object(&self.path_of(key).ok_or(StoreError::NotFound)?).await?,
        };
        Ok(digester.stored(key))
    }

    /// As `complete_partial`, the pieces passing through `through` as they stream in.
    async fn complete_partial_through(
        &self,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        Ok(self.join(key, pieces, through).await?.is_some())
    }

    async fn begin_parts(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.begin_upload_parts(key).await.map(Some)
    }

    async fn put_part(&self, key: &str, id: &str, index: usize, bytes: Bytes) -> Result<String, StoreError> {
        self.send_upload_part(key, id, index, bytes).await
    }

    async fn read_pieces(&self, key: &str, from: u64, pieces: &[String], into: &mut [u8]) -> Result<(), StoreError> {
        self.read_upload_pieces(key, from, pieces, into).await
    }

    async fn complete_parts(&self, key: &str, id: &str, parts: Vec<String>) -> Result<(), StoreError> {
        self.complete_upload_parts(key, id, parts).await?;
        self.delete_partial(key).await.map(drop)
    }

    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError> {
        match self.objects.delete(&self.piece_path(key, piece)?).await {
            Ok(()) | Err(::object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(store_error(error)),
        }
    }

    /// Removes every piece of `key`, recorded or not, and aborts its multipart upload; a second
    /// listing checks none is left.
    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        let folder = self.pieces_of(key).ok_or(StoreError::NotFound)?;
        let found: Vec<ObjectPath> =
            self.objects.list(Some(&folder)).map_ok(|meta| meta.location).try_collect().await.map_err(store_error)?;
        if found.is_empty() {
            return Ok(Deleted::AlreadyAbsent);
        }
        for path in &found {
            // The upload's multipart upload goes before the marker naming it.
            self.abort_marked(key, path).await?;
            match self.objects.delete(path).await {
                Ok(()) | Err(::object_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(store_error(error)),
            }
        }
        match self.objects.list(Some(&folder)).next().await {
            None => Ok(Deleted::Removed),
            Some(Err(error)) => Err(store_error(error)),
            Some(Ok(_)) => Err(StoreError::Io(io::Error::other("a piece is still there after its delete"))),
        }
    }
}

/// Whether `name` (below the store's prefix) is a piece's object, `.part-KEY/<piece>`: a piece
/// over one part is a multipart upload of its own, which the leftover sweep must be able to abort.
pub(super) fn is_piece_name(name: &str) -> bool {
    let piece = name.strip_prefix(PARTIAL_PREFIX).and_then(|rest| rest.split_once('/'));
    piece.is_some_and(|(key, piece)| crate::session::is_token_shaped(key) && piece_start(piece).is_some())
}

/// The start offset in a piece's name, or `None` for anything that is not a piece name.
fn piece_start(piece: &str) -> Option<u64> {
    let (offset, nonce) = piece.split_once('-')?;
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let shaped = offset.len() == OFFSET_DIGITS
        && offset.bytes().all(|b| b.is_ascii_digit())
        && nonce.len() == NONCE_DIGITS
        && nonce.bytes().all(hex);
    if shaped { offset.parse().ok() } else { None }
}

fn broken(what: &str) -> StoreError {
    StoreError::Io(io::Error::other(what.to_owned()))
}

/// Where [`ObjectFileStore::joined`] is: the pieces still to read, the one being read (its bytes
/// and the offset where it must end), and the offset reached.
struct Joining {
    pieces: std::vec::IntoIter<(Option<u64>, ObjectPath)>,
    current: Option<(BoxStream<'static, ::object_store::Result<Bytes>>, u64)>,
    offset: u64,
}

/// A reader that ends at its inner reader's first error, keeping the error in `cut`: what arrived
/// before a cut connection is a piece all the same.
struct UntilCut<'c, R> {
    inner: R,
    cut: &'c std::sync::Mutex<Option<io::Error>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilCut<'_, R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = &mut *self;
        let mut cut = this.cut.lock().unwrap_or_else(|e| e.into_inner());
        if cut.is_some() {
            return std::task::Poll::Ready(Ok(()));
        }
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            std::task::Poll::Ready(Err(error)) => {
                *cut = Some(error);
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::piece_start;

    #[test]
    fn a_piece_name_is_a_key_folder_and_a_piece_shaped_name() {
        let key = "ab12".repeat(16);
        assert!(super::is_piece_name(&format!(".part-{key}/00000000000000000042-0123456789abcdef")));
        for bad in [
            format!(".part-{key}"),
            format!(".part-{key}/../x"),
            ".part-../00000000000000000042-0123456789abcdef".to_owned(),
            format!("{key}/00000000000000000042-0123456789abcdef"),
        ] {
            assert!(!super::is_piece_name(&bad), "{bad}");
        }
    }

    #[test]
    fn only_piece_shaped_names_have_a_start() {
        assert_eq!(piece_start("00000000000000000042-0123456789abcdef"), Some(42));
        assert_eq!(piece_start(&format!("{}-0123456789abcdef", u64::MAX)), Some(u64::MAX));
        for bad in
            ["", "42-0123456789abcdef", "00000000000000000042-0123456789ABCDEF", "../../x", "00000000000000000042"]
        {
            assert_eq!(piece_start(bad), None, "{bad}");
        }
    }
}
