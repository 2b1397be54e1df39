//! What the object store lists to the leftover sweep, from one paged LIST under its prefix:
//! stored objects (`PREFIX<key>`), the pieces of resumable uploads (`PREFIX.part-<key>/…`, one
//! leftover per upload, as old as its newest piece), and the markers of multipart uploads not yet
//! completed or aborted (`PREFIX.multipart/<hex of the upload id>`, holding the object's path;
//! hex because an upload id may hold characters an object name should not).
//!
//! Ages compare the store's `last_modified` with this host's clock: the hour a leftover must wait
//! is far longer than any skew between two clocks kept by NTP.

use std::time::Duration;

use ::object_store::{MultipartId, ObjectMeta, ObjectStore, path::Path as ObjectPath};
use chrono::{DateTime, Utc};
use futures_util::{
    StreamExt,
    stream::{self, BoxStream},
};

use super::{
    leftovers::{Leftover, LeftoverKind, not_kept_here},
    object_partial::is_piece_name,
    object_store::{ObjectFileStore, store_error},
    store::{Deleted, FileStore, PARTIAL_PREFIX, ResumableStore, StoreError, SweptStore},
};

/// The folder, under the store's prefix, of the markers of multipart uploads in progress.
const MULTIPART_MARKERS: &str = ".multipart/";

/// A listed object as the sweep sees it.
enum Listed {
    Leftover(LeftoverKind, String),
    /// One piece of the partial upload of this key.
    Piece(String),
}

/// Where a LIST is: the pieces of one partial upload are gathered into one leftover, so the
/// walk holds that upload until a name of another comes.
struct Walk {
    objects: BoxStream<'static, ::object_store::Result<ObjectMeta>>,
    /// The key of the partial upload being gathered, and its newest piece's time.
    partial: Option<(String, DateTime<Utc>)>,
    /// A leftover listed while a partial upload was still to be given out.
    held: Option<Leftover>,
    done: bool,
}

impl ObjectFileStore {
    /// The marker object of the multipart upload `id`.
    pub(super) fn multipart_marker(&self, id: &MultipartId) -> ObjectPath {
        ObjectPath::from(format!("{}{MULTIPART_MARKERS}{}", self.prefix, hex::encode(id)))
    }

    /// What a listed object is, or `None` for anything that is not ours.
    fn listed(&self, meta: &ObjectMeta) -> Option<Listed> {
        let name = meta.location.as_ref().strip_prefix(self.prefix.as_str())?;
        if let Some(id) = name.strip_prefix(MULTIPART_MARKERS) {
            return Some(Listed::Leftover(LeftoverKind::Multipart, String::from_utf8(hex::decode(id).ok()?).ok()?));
        }
        if let Some((key, _piece)) = name.strip_prefix(PARTIAL_PREFIX).and_then(|rest| rest.split_once('/')) {
            return crate::session::is_token_shaped(key).then(|| Listed::Piece(key.to_owned()));
        }
        crate::session::is_token_shaped(name).then(|| Listed::Leftover(LeftoverKind::Stored, name.to_owned()))
    }

    /// Aborts the multipart upload `id` that its marker names, then removes the marker. The
    /// upload counts as removed only when the store aborted it: one completed or aborted already
    /// (a marker left behind) counts as already absent.
    async fn abort_abandoned(&self, id: &str) -> Result<Deleted, StoreError> {
        let id: MultipartId = id.to_owned();
        let marker = self.multipart_marker(&id);
        let body = match self.objects.get(&marker).await {
            Ok(found) => found.bytes().await.map_err(store_error)?,
            Err(::object_store::Error::NotFound { .. }) => return Ok(Deleted::AlreadyAbsent),
            Err(error) => return Err(store_error(error)),
        };
        let path = std::str::from_utf8(&body).ok().and_then(|path| ObjectPath::parse(path).ok());
        // Only an object of ours (a stored file or a tus piece): a marker never makes the sweep
        // touch anything else.
        let ours = path.filter(|p| p.as_ref().strip_prefix(self.prefix.as_str()).is_some_and(is_written_by_us));
        let aborted = match ours {
            None => {
                tracing::warn!("a multipart marker names no object of ours; removing the marker only");
                Deleted::AlreadyAbsent
            }
            Some(path) => match self.multipart.abort_multipart(&path, &id).await {
                Ok(()) => Deleted::Removed,
                // S3 answers NoSuchUpload (404) when the upload was completed or aborted already.
                Err(::object_store::Error::NotFound { .. }) => Deleted::AlreadyAbsent,
                Err(error) => return Err(store_error(error)),
            },
        };
        self.objects.delete(&marker).await.map_err(store_error)?;
        Ok(aborted)
    }
}

#[async_trait::async_trait]
impl SweptStore for ObjectFileStore {
    fn leftovers(&self) -> BoxStream<'_, Result<Leftover, StoreError>> {
        let prefix = (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()));
        let walk = Walk { objects: self.objects.list(prefix.as_ref()), partial: None, held: None, done: false };
        let now = Utc::now();
        Box::pin(stream::unfold(walk, move |mut walk| async move {
            if let Some(held) = walk.held.take() {
                return Some((Ok(held), walk));
            }
            while !walk.done {
                let meta = match walk.objects.next().await {
                    Some(Ok(meta)) => meta,
                    Some(Err(error)) => {
                        walk.done = true;
                        return Some((Err(store_error(error)), walk));
                    }
                    None => break,
                };
                let (kind, name) = match self.listed(&meta) {
                    None => continue,
                    Some(Listed::Piece(key)) => {
                        match &mut walk.partial {
                            Some((gathering, newest)) if *gathering == key => {
                                *newest = (*newest).max(meta.last_modified)
                            }
                            partial => {
                                if let Some(done) = partial.replace((key, meta.last_modified)) {
                                    return Some((Ok(partial_leftover(done, now)), walk));
                                }
                            }
                        }
                        continue;
                    }
                    Some(Listed::Leftover(kind, name)) => (kind, name),
                };
                let leftover = Leftover { kind, name, age: age(meta.last_modified, now) };
                return Some(match walk.partial.take() {
                    Some(done) => {
                        walk.held = Some(leftover);
                        (Ok(partial_leftover(done, now)), walk)
                    }
                    None => (Ok(leftover), walk),
                });
            }
            walk.done = true;
            walk.partial.take().map(|done| (Ok(partial_leftover(done, now)), walk))
        }))
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        match leftover.kind {
            LeftoverKind::Stored => self.delete(&leftover.name).await,
            LeftoverKind::Partial => self.delete_partial(&leftover.name).await,
            LeftoverKind::Multipart => self.abort_abandoned(&leftover.name).await,
            LeftoverKind::Temp => Err(not_kept_here(leftover.kind)),
        }
    }
}

/// Whether `name` (below the prefix) is an object watasu writes through a multipart upload: a
/// stored file's key, or a piece of a resumable upload.
fn is_written_by_us(name: &str) -> bool {
    crate::session::is_token_shaped(name) || is_piece_name(name)
}

fn partial_leftover((key, newest): (String, DateTime<Utc>), now: DateTime<Utc>) -> Leftover {
    Leftover { kind: LeftoverKind::Partial, name: key, age: age(newest, now) }
}

/// How long before `now` the store last wrote an object; a time ahead of ours reads as new.
fn age(modified: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (now - modified).to_std().unwrap_or(Duration::ZERO)
}
