//! One file sent through the server's tus endpoint: created with its length and name, then
//! appended in pieces streamed from the file, so memory stays flat whatever the file's size. When
//! the connection is lost or the server fails, the piece is not sent again blindly: after a wait
//! the upload's offset is asked (HEAD) and the file goes on from the bytes the server kept.

use std::{
    io::{IsTerminal, SeekFrom},
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use futures_util::TryStreamExt;
use reqwest::{Body, Method, StatusCode, header::CONTENT_LENGTH};
use tokio::{
    io::{AsyncReadExt, AsyncSeekExt},
    time::Instant,
};
use url::Url;

use super::{Failure, Patience, SILENCE, Server};
use crate::uploads::Metadata;

const TUS_VERSION: &str = "1.0.0";

/// The bytes of one PATCH: the page's piece size, so a request fits under a proxy's 100 MB cap
/// in front of the server, as the browser's do.
pub const PIECE_BYTES: u64 = 50 * 1024 * 1024;

/// Conflicting offsets in a row (the server kept a piece whose answer was lost) before giving up.
const CONFLICTS_TOLERATED: u32 = 3;

/// Sends the file at `path` as `name`; answers the finished upload's id.
pub async fn upload(server: &Server, path: &Path, name: &str) -> anyhow::Result<String> {
    let file = tokio::fs::File::open(path).await.map_err(|e| reading(path, e))?;
    let length = file.metadata().await.map_err(|e| reading(path, e))?.len();
    let url = create(server, name, length).await?;
    let progress = Progress::new(name, length);
    let mut patience = Patience::new();
    let mut conflicts = 0;
    // The offset the server holds, when known; unknown after a failure until HEAD tells.
    let mut known = Some(0);
    loop {
        let offset = match known {
            Some(offset) => offset,
            None => match head(server, &url).await {
                Ok(offset) => offset,
                Err(failure) => {
                    patience.wait(failure, name).await?;
                    continue;
                }
            },
        };
        progress.set(offset);
        if offset >= length {
            progress.done();
            break;
        }
        let piece = PIECE_BYTES.min(length - offset);
        match patch(server, &url, &file, offset, piece, &progress).await {
            Ok(next) => {
                known = Some(next);
                patience.reset();
                conflicts = 0;
            }
            Err(Failure::Refused { status: StatusCode::CONFLICT, .. }) if conflicts < CONFLICTS_TOLERATED => {
                conflicts += 1;
                known = None;
            }
            Err(failure) => {
                known = None;
                patience.wait(failure, name).await?;
            }
        }
    }
    let id = url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
    Ok(id.to_owned())
}

fn reading(path: &Path, error: std::io::Error) -> anyhow::Error {
    crate::cli::usage(format!("cannot read {}: {error}", path.display()))
}

/// POST /uploads: the upload's address. Tried again only when the request never reached the
/// server or the server refused it for now; a connection lost after sending might have created
/// one, and a second would hold the sender's room until it expires.
async fn create(server: &Server, name: &str, length: u64) -> anyhow::Result<Url> {
    // Of unknown type, as `watasu share create` records a file: recipients get every file as
    // octets whatever its type says.
    let metadata = Metadata::of_file(name, "application/octet-stream").raw.unwrap_or_default();
    let mut patience = Patience::new();
    loop {
        let sent = server
            .request(Method::POST, server.url("uploads")?)
            .header("Tus-Resumable", TUS_VERSION)
            .header("Upload-Length", length)
            .header("Upload-Metadata", &metadata)
            .send()
            .await;
        let failure = match sent {
            Ok(response) => match Failure::check(response).await {
                Ok(created) => {
                    let location = created.headers().get("location").and_then(|v| v.to_str().ok());
                    let location = location.ok_or_else(|| anyhow::anyhow!("the server created no upload address"))?;
                    return server.url(location);
                }
                Err(failure) => failure,
            },
            Err(error) if error.is_connect() => Failure::lost(error),
            Err(error) => return Err(Failure::lost(error).into()),
        };
        patience.wait(failure, name).await?;
    }
}

/// HEAD: the offset the server holds.
async fn head(server: &Server, url: &Url) -> Result<u64, Failure> {
    let response = server
        .request(Method::HEAD, url.clone())
        .header("Tus-Resumable", TUS_VERSION)
        .send()
        .await
        .map_err(Failure::lost)?;
    offset_of(&Failure::check(response).await?)
}

/// PATCH: `piece` bytes from `offset`, streamed from the file; the server's new offset.
async fn patch(
    server: &Server,
    url: &Url,
    file: &tokio::fs::File,
    offset: u64,
    piece: u64,
    progress: &Progress,
) -> Result<u64, Failure> {
    let local = |e: std::io::Error| Failure::Unexpected(format!("reading the file: {e}"));
    let mut reader = file.try_clone().await.map_err(local)?;
    reader.seek(SeekFrom::Start(offset)).await.map_err(local)?;
    let counter = progress.counter();
    let stream = tokio_util::io::ReaderStream::new(reader.take(piece)).inspect_ok(move |chunk| {
        counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    });
    let sent = server
        .streaming(Method::PATCH, url.clone())
        .header("Tus-Resumable", TUS_VERSION)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", offset)
        .header(CONTENT_LENGTH, piece)
        .body(Body::wrap_stream(stream));
    progress
        .watch(async {
            let response = sent.send().await.map_err(Failure::lost)?;
            offset_of(&Failure::check(response).await?)
        })
        .await
}

fn offset_of(response: &reqwest::Response) -> Result<u64, Failure> {
    let offset = response.headers().get("upload-offset").and_then(|v| v.to_str().ok()?.parse().ok());
    offset.ok_or_else(|| Failure::Unexpected("the server's answer has no Upload-Offset".to_owned()))
}

/// The upload's progress on standard error, only when a person watches it there.
struct Progress {
    name: String,
    length: u64,
    sent: Arc<AtomicU64>,
    shown: bool,
}

impl Progress {
    fn new(name: &str, length: u64) -> Self {
        let shown = std::io::stderr().is_terminal();
        Self { name: name.to_owned(), length, sent: Arc::default(), shown }
    }

    fn counter(&self) -> Arc<AtomicU64> {
        self.sent.clone()
    }

    fn set(&self, offset: u64) {
        self.sent.store(offset, Ordering::Relaxed);
    }

    fn print(&self) {
        if self.shown {
            let sent = self.sent.load(Ordering::Relaxed).min(self.length);
            let percent = (sent * 100).checked_div(self.length).unwrap_or(100);
            eprint!("\r{}: {percent}% of {} MB", self.name, self.length.div_ceil(1_000_000));
        }
    }

    fn done(&self) {
        self.print();
        if self.shown {
            eprintln!();
        }
    }

    /// Runs `call`, printing the progress each second meanwhile. A server that takes no byte of
    /// the piece and gives no answer for [`SILENCE`] has stalled: the call counts as lost (and
    /// the upload asks where it stands before going on).
    async fn watch<T>(&self, call: impl Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
        let mut call = std::pin::pin!(call);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let (mut seen, mut moved) = (self.sent.load(Ordering::Relaxed), Instant::now());
        loop {
            tokio::select! {
                answer = &mut call => return answer,
                _ = tick.tick() => {
                    self.print();
                    let sent = self.sent.load(Ordering::Relaxed);
                    if sent != seen {
                        (seen, moved) = (sent, Instant::now());
                    } else if moved.elapsed() >= SILENCE {
                        return Err(Failure::silent());
                    }
                }
            }
        }
    }
}
