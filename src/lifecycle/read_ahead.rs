//! Local files streamed with read-ahead: positional reads straight into the chunks the response
//! sends, the next chunk read while the one before waits to be written. The writer never waits for
//! a read it could have had earlier, chunks are up to four times the 256 KiB reads before, and
//! nothing is copied out of a buffer of `tokio::fs::File`'s own (docs/decisions.md has the measurements).

use std::{
    fs::File,
    io,
    os::unix::fs::FileExt,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::sync::mpsc;

/// Bytes per read while few downloads run, and once many do: a download holds about three chunks
/// (one being written, one waiting, one being read), so memory stays bounded however many run,
/// and nobody waits for anybody else's download to end.
const BIG_CHUNK: usize = 1 << 20;
const SMALL_CHUNK: usize = 128 << 10;
/// Downloads that may read big chunks at once (about 48 MiB between them).
const BIG_READERS: usize = 16;

static READERS: AtomicUsize = AtomicUsize::new(0);

/// Counts a running reader for as long as it lives.
struct Reading;

impl Reading {
    fn start() -> Self {
        READERS.fetch_add(1, Ordering::AcqRel);
        Self
    }

    fn chunk(&self) -> usize {
        if READERS.load(Ordering::Acquire) <= BIG_READERS { BIG_CHUNK } else { SMALL_CHUNK }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        READERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The `len` bytes of `file` from `start` (fewer if the file ends first).
pub fn chunks(file: File, start: u64, len: u64) -> BoxStream<'static, io::Result<Bytes>> {
    let (sender, receiver) = mpsc::channel(1);
    // Each read is its own blocking task, so no thread is held while a slow client drains the
    // chunk before: a thousand downloads to phones do not use up the blocking pool.
    tokio::spawn(async move {
        let (file, reading) = (Arc::new(file), Reading::start());
        let end = start.saturating_add(len);
        let mut offset = start;
        while offset < end {
            let want = usize::try_from(end - offset).unwrap_or(usize::MAX).min(reading.chunk());
            let file = file.clone();
            let read = tokio::task::spawn_blocking(move || read_chunk(&file, offset, want)).await;
            let chunk = match read.unwrap_or_else(|panicked| Err(io::Error::other(panicked))) {
                Ok(chunk) if chunk.is_empty() => return,
                Ok(chunk) => chunk,
                Err(error) => {
                    let _ = sender.send(Err(error)).await;
                    return;
                }
            };
            offset += chunk.len() as u64;
            // Refused once the response is dropped (the client went away): stop reading.
            if sender.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
    });
    stream::unfold(receiver, |mut receiver| async move { Some((receiver.recv().await?, receiver)) }).boxed()
}

/// Up to `want` bytes at `offset`; empty at the end of the file.
fn read_chunk(file: &File, offset: u64, want: usize) -> io::Result<Bytes> {
    let mut buffer = BytesMut::zeroed(want);
    let mut filled = 0;
    while filled < want {
        match file.read_at(&mut buffer[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buffer.truncate(filled);
    Ok(buffer.freeze())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use futures_util::TryStreamExt;

    use super::*;

    fn file_of(len: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&content).unwrap();
        (file, content)
    }

    async fn read(file: &tempfile::NamedTempFile, start: u64, len: u64) -> (Vec<u8>, usize) {
        let chunks: Vec<Bytes> = chunks(file.reopen().unwrap(), start, len).try_collect().await.unwrap();
        (chunks.concat(), chunks.len())
    }

    #[tokio::test]
    async fn a_file_over_several_chunks_arrives_whole_and_in_order() {
        let (file, content) = file_of(3 * BIG_CHUNK + 5);
        let (back, count) = read(&file, 0, u64::MAX).await;
        assert!(back == content, "the bytes differ");
        assert!(count >= 4, "{count} chunks");
    }

    #[tokio::test]
    async fn a_range_yields_exactly_its_bytes_and_stops_at_the_end_of_the_file() {
        let (file, content) = file_of(2 * BIG_CHUNK + 17);
        assert!(read(&file, 1000, BIG_CHUNK as u64 + 3).await.0 == content[1000..1000 + BIG_CHUNK + 3]);
        assert!(read(&file, 2 * BIG_CHUNK as u64, 1 << 30).await.0 == content[2 * BIG_CHUNK..]);
        assert_eq!(read(&file, 3 * BIG_CHUNK as u64, 10).await, (Vec::new(), 0));
    }
}
