//! Files in an S3-compatible object store (AWS S3, R2, B2, MinIO, Garage…) behind `FileStore`.
//! Uploads stream as multipart uploads of fixed-size parts, so memory stays flat whatever the size;
//! the SHA-256 is of the bytes as they streamed past, never a figure the store reports. The client
//! is held through object_store's traits only: another provider is another builder, not a rewrite.
//! Its resumable uploads (`object_partial`) and its leftovers (`object_leftovers`) implement their
//! traits beside their logic.

use std::{
    io,
    sync::Arc,
    time::{Duration, Instant},
};

use ::object_store::{
    GetOptions, GetRange, GetResult, MultipartId, ObjectStore, PutPayload,
    aws::AmazonS3Builder,
    multipart::{MultipartStore, PartId},
    path::Path as ObjectPath,
};
use futures_util::{StreamExt, TryStreamExt};
use tokio::io::AsyncReadExt;

use super::{
    Digester,
    part_budget::{Part, PartBuffer},
    store::{Content, Deleted, FileStore, OpenedFile, StoreError, StoredFile},
};
use crate::secret::random_token;

/// Bytes per uploaded part: S3 refuses parts under 5 MiB (except the last) and more than 10,000
/// parts, so 8 MiB parts allow files up to about 78 GiB.
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts of one upload sending at once while the next is read: memory is about (this + 1) parts,
/// within the process's part budget.
pub const PARTS_IN_FLIGHT: usize = 2;
/// How often a streaming upload's multipart marker is written again after a part: well inside the
/// hour the leftover sweep leaves a marker alone, and rarely enough that a fast upload writes it
/// once, at its start.
pub const MARKER_RENEWAL: Duration = Duration::from_secs(10 * 60);

/// Files as objects named `PREFIX/KEY` in one bucket.
pub struct ObjectFileStore {
    pub(super) objects: Arc<dyn ObjectStore>,
    /// The same client's multipart calls: large files go up as parts through it.
    pub(super) multipart: Arc<dyn MultipartStore>,
    pub(super) prefix: String,
    /// How often a streaming upload's marker is written again (`MARKER_RENEWAL`).
    marker_renewal: Duration,
}

impl std::fmt::Debug for ObjectFileStore {
    /// The client's own description (`MultipartStore` has none: it is the same client).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectFileStore").field("objects", &self.objects).field("prefix", &self.prefix).finish()
    }
}

impl ObjectFileStore {
    /// The store at `s3://BUCKET[/PREFIX]`, with endpoint, region and credentials from the
    /// standard `AWS_*` environment variables (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, …).
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        Self::from_url_with(url, AmazonS3Builder::from_env())
    }

    /// The same with settings given in code instead of the environment.
    pub fn from_url_with(url: &str, builder: AmazonS3Builder) -> anyhow::Result<Self> {
        let (bucket, prefix) = parse_url(url)?;
        let client = Arc::new(builder.with_bucket_name(bucket).build()?);
        Ok(Self::over(client.clone(), client, prefix))
    }

    /// The store over any object_store client (`multipart` is the same client's multipart side),
    /// its objects named under `prefix` (`""` or ending in `/`).
    pub fn over(objects: Arc<dyn ObjectStore>, multipart: Arc<dyn MultipartStore>, prefix: String) -> Self {
        Self { objects, multipart, prefix, marker_renewal: MARKER_RENEWAL }
    }

    /// The same, writing a streaming upload's marker again after a part once `every` has passed
    /// since it was last written (`Duration::ZERO`: after every part).
    pub fn renewing_markers_every(self, every: Duration) -> Self {
        Self { marker_renewal: every, ..self }
    }

    /// Stores `content` under a key chosen elsewhere (a file moving in from the local folder).
    pub async fn put_as<'a>(&self, key: &str, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        Ok(self.put_at(&path, content, max_bytes).await?.stored(key))
    }

    /// The object of a key, or `None` for anything that is not one of our keys.
    pub(super) fn path_of(&self, key: &str) -> Option<ObjectPath> {
        crate::session::is_token_shaped(key).then(|| ObjectPath::from(format!("{}{key}", self.prefix)))
    }

    /// Object size, or `NotFound`.
    pub(super) async fn size_of(&self, path: &ObjectPath) -> Result<u64, StoreError> {
        Ok(self.objects.head(path).await.map_err(store_error)?.size)
    }

    /// Streams `content` into the object at `path` (refusing more than `max_bytes`); answers the
    /// digest of what streamed.
    pub(super) async fn put_at<'a>(
        &self,
        path: &ObjectPath,
        mut content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Digester, StoreError> {
        let mut digest = Digesting { digester: Digester::default(), max_bytes };
        let first = digest.read_part(&mut content).await?;
        if first.bytes.len() < PART_BYTES {
            // All of it fits in one part: one plain PUT (S3 completes no upload of zero parts).
            self.objects.put(path, PutPayload::from(first.bytes.clone())).await.map_err(store_error)?;
        } else {
            self.upload_parts(path, first, &mut content, &mut digest).await?;
        }
        Ok(digest.digester)
    }

    /// Streams the parts as one multipart upload, `PARTS_IN_FLIGHT` at a time while the next is
    /// read. A marker object names the upload from its creation until it is completed or
    /// aborted, so the leftover sweep finds an upload whose process died (S3 lists no uploads
    /// through object_store).
    async fn upload_parts<'a>(
        &self,
        path: &ObjectPath,
        first: Part,
        content: &mut Content<'a>,
        digest: &mut Digesting,
    ) -> Result<(), StoreError> {
        let id = self.multipart.create_multipart(path).await.map_err(store_error)?;
        let marker = self.multipart_marker(&id);
        let outcome = match self.objects.put(&marker, PutPayload::from(path.as_ref().to_owned())).await {
            Ok(_) => match self.send_parts(path, &id, first, content, digest).await {
                Ok(parts) => self.multipart.complete_multipart(path, &id, parts).await.map(drop).map_err(store_error),
                Err(error) => Err(error),
            },
            Err(error) => Err(store_error(error)),
        };
        if outcome.is_err() {
            // An aborted upload keeps none of its parts (and costs nothing to keep).
            if let Err(abort) = self.multipart.abort_multipart(path, &id).await {
                tracing::warn!(%abort, "aborting a multipart upload failed; the leftover sweep removes it");
                return outcome;
            }
        }
        // Done with either way; a marker left behind is removed by the sweep (its abort finds nothing).
        if let Err(error) = self.objects.delete(&marker).await {
            tracing::warn!(%error, "deleting a multipart upload's marker failed; the leftover sweep removes it");
        }
        outcome
    }

    /// Uploads `first` and the rest of `content` as parts; their ids, in order.
    async fn send_parts<'a>(
        &self,
        path: &ObjectPath,
        id: &MultipartId,
        first: Part,
        content: &mut Content<'a>,
        digest: &mut Digesting,
    ) -> Result<Vec<PartId>, StoreError> {
        // Dropping the set (the caller gone) cancels the parts still sending.
        let mut sending = tokio::task::JoinSet::new();
        let mut parts: Vec<Option<PartId>> = Vec::new();
        // The marker was written just before the first part.
        let mut marker_written = Instant::now();
        let sent = async {
            let mut part = first;
            loop {
                while sending.len() >= PARTS_IN_FLIGHT {
                    let (index, sent) = joined(sending.join_next().await)?;
                    parts[index] = Some(sent);
                }
                let last = part.bytes.len() < PART_BYTES;
                let renew_marker = marker_written.elapsed() >= self.marker_renewal;
                if renew_marker {
                    marker_written = Instant::now();
                }
                sending.spawn(self.send_part(path, id, parts.len(), part, renew_marker));
                parts.push(None);
                if last {
                    break;
                }
                part = digest.read_part(content).await?;
                if part.bytes.is_empty() {
                    break;
                }
            }
            while let Some(result) = sending.join_next().await {
                let (index, sent) = joined(Some(result))?;
                parts[index] = Some(sent);
            }
            Ok(())
        }
        .await;
        if let Err(error) = sent {
            // Stopped before the upload is aborted, so that no part or marker lands after.
            sending.shutdown().await;
            return Err(error);
        }
        Ok(parts.into_iter().map(|part| part.expect("every part was sent")).collect())
    }

    /// Sends part `index`, then, with `renew_marker`, rewrites the marker: it stays young while
    /// the upload is alive, however long it takes, so the sweep aborts only uploads that stopped.
    fn send_part(
        &self,
        path: &ObjectPath,
        id: &MultipartId,
        index: usize,
        part: Part,
        renew_marker: bool,
    ) -> impl Future<Output = (usize, ::object_store::Result<PartId>)> + Send + 'static {
        let (objects, multipart) = (self.objects.clone(), self.multipart.clone());
        let (path, id, marker) = (path.clone(), id.clone(), self.multipart_marker(id));
        async move {
            let sent = async {
                // The part keeps its share of the budget until it has been sent.
                let part = multipart.put_part(&path, &id, index, PutPayload::from(part.bytes.clone())).await?;
                if renew_marker {
                    objects.put(&marker, PutPayload::from(path.as_ref().to_owned())).await?;
                }
                Ok(part)
            };
            (index, sent.await)
        }
    }
}

/// A finished part upload as its index and id, or why it failed.
type SentPart = Result<(usize, ::object_store::Result<PartId>), tokio::task::JoinError>;

fn joined(result: Option<SentPart>) -> Result<(usize, PartId), StoreError> {
    match result {
        Some(Ok((index, Ok(part)))) => Ok((index, part)),
        Some(Ok((_, Err(error)))) => Err(store_error(error)),
        Some(Err(error)) => Err(StoreError::Io(io::Error::other(error))),
        None => Err(StoreError::Io(io::Error::other("no part upload was running"))),
    }
}

/// `s3://BUCKET[/PREFIX]` as the bucket and the key prefix (`""` or ending in `/`).
fn parse_url(url: &str) -> anyhow::Result<(&str, String)> {
    let rest =
        url.strip_prefix("s3://").ok_or_else(|| anyhow::anyhow!("storage URL {url:?} is not s3://BUCKET[/PREFIX]"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    anyhow::ensure!(!bucket.is_empty(), "storage URL {url:?} names no bucket");
    let prefix = prefix.trim_matches('/');
    Ok((bucket, if prefix.is_empty() { String::new() } else { format!("{prefix}/") }))
}

/// Size and SHA-256 of everything read so far, refusing more than `max_bytes`.
struct Digesting {
    digester: Digester,
    max_bytes: u64,
}

impl Digesting {
    /// Reads up to one part, once its buffer fits in the budget; shorter only where the content ends.
    async fn read_part<'a>(&mut self, content: &mut Content<'a>) -> Result<Part, StoreError> {
        let mut part = PartBuffer::new(PART_BYTES).await;
        let mut filled = 0;
        while filled < PART_BYTES {
            let read = content.read(&mut part[filled..]).await.map_err(StoreError::Content)?;
            if read == 0 {
                break;
            }
            if self.digester.size() + read as u64 > self.max_bytes {
                return Err(StoreError::TooLarge { limit: self.max_bytes });
            }
            self.digester.update(&part[filled..filled + read]);
            filled += read;
        }
        Ok(part.into_part(filled))
    }
}

pub(super) fn store_error(error: ::object_store::Error) -> StoreError {
    match error {
        ::object_store::Error::NotFound { .. } => StoreError::NotFound,
        other => StoreError::Io(io::Error::other(other)),
    }
}

fn opened(result: GetResult, size_bytes: u64) -> OpenedFile {
    OpenedFile::from_chunks(result.into_stream().map_err(io::Error::other).boxed(), size_bytes)
}

#[async_trait::async_trait]
impl FileStore for ObjectFileStore {
    async fn put<'a>(&self, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        let key = random_token().expose().to_owned();
        let path = self.path_of(&key).expect("random tokens are keys");
        Ok(self.put_at(&path, content, max_bytes).await?.stored(key))
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let result = self.objects.get(&path).await.map_err(store_error)?;
        let size_bytes = result.meta.size;
        Ok(opened(result, size_bytes))
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        // S3 refuses a range past the end, which the trait answers with no bytes: size first.
        let size_bytes = self.size_of(&path).await?;
        let end = start.saturating_add(len).min(size_bytes);
        if start >= end {
            return Ok(OpenedFile::empty(size_bytes));
        }
        let options = GetOptions { range: Some(GetRange::Bounded(start..end)), ..GetOptions::default() };
        let result = self.objects.get_opts(&path, options).await.map_err(store_error)?;
        Ok(opened(result, size_bytes))
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        // S3 answers a DELETE the same whether or not the object was there: a HEAD tells which.
        match self.size_of(&path).await {
            Err(StoreError::NotFound) => return Ok(Deleted::AlreadyAbsent),
            Err(error) => return Err(error),
            Ok(_) => {}
        }
        self.objects.delete(&path).await.map_err(store_error)?;
        // The second look: the object must be gone now, not merely "deleted" by the answer.
        match self.size_of(&path).await {
            Err(StoreError::NotFound) => Ok(Deleted::Removed),
            Err(error) => Err(error),
            Ok(_) => Err(StoreError::Io(io::Error::other("the object is still there after its delete"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_url;

    #[test]
    fn a_storage_url_names_a_bucket_and_an_optional_prefix() {
        assert_eq!(parse_url("s3://files").unwrap(), ("files", String::new()));
        assert_eq!(parse_url("s3://files/").unwrap(), ("files", String::new()));
        assert_eq!(parse_url("s3://files/watasu/prod/").unwrap(), ("files", "watasu/prod/".to_owned()));
        for bad in ["files", "s3://", "s3:///x", "/var/lib/watasu"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
