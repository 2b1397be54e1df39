//! Local files streamed with read-ahead: each chunk is a mapping of the file, read from the disk on
//! the blocking pool while the chunk before waits to be written. The writer copies straight from
//! the page cache: no buffer is allocated, zeroed or filled by a copy (docs/decisions/ has the
//! measurements).

use std::{
    fs::File,
    io,
    os::fd::AsRawFd,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::sync::mpsc;

/// Bytes per read while few downloads run, and once many do: a download holds `CHUNKS_HELD`, so
/// memory stays bounded however many run, and nobody waits for anybody else's download to end.
const BIG_CHUNK: usize = 1 << 20;
const SMALL_CHUNK: usize = 128 << 10;
/// Downloads that may read big chunks at once (about 48 MiB between them).
const BIG_READERS: usize = 16;

/// Chunks a download holds at most: one being written, one waiting, one being read.
const CHUNKS_HELD: usize = 3;

static READERS: AtomicUsize = AtomicUsize::new(0);

/// The most that `downloads` running at once may hold mapped, whatever their files (pages of the
/// page cache, counted in the process's RSS while mapped): the bound a crowd is checked against.
pub fn mapped_bound(downloads: usize) -> usize {
    let big = downloads.min(BIG_READERS);
    CHUNKS_HELD * (big * BIG_CHUNK + (downloads - big) * SMALL_CHUNK)
}

/// The bytes a download should read (or open) at a time now, by how many downloads run.
pub fn chunk_bytes() -> usize {
    if READERS.load(Ordering::Acquire) <= BIG_READERS { BIG_CHUNK } else { SMALL_CHUNK }
}

/// Counts a running reader for as long as it lives.
struct Reading;

impl Reading {
    fn start() -> Self {
        READERS.fetch_add(1, Ordering::AcqRel);
        Self
    }

    fn chunk(&self) -> usize {
        chunk_bytes()
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        READERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The `len` bytes of `file` (whose size is `size_bytes`) from `start`, fewer if the file ends
/// first: nothing past its end is mapped, as touching that would be a fault, not an error.
pub fn chunks(file: File, size_bytes: u64, start: u64, len: u64) -> BoxStream<'static, io::Result<Bytes>> {
    let (sender, receiver) = mpsc::channel(1);
    let end = start.saturating_add(len).min(size_bytes);
    // Each read is its own blocking task, so no thread is held while a slow client drains the
    // chunk before: a thousand downloads to phones do not use up the blocking pool.
    tokio::spawn(async move {
        let (file, reading) = (Arc::new(file), Reading::start());
        let mut offset = start;
        while offset < end {
            let want = usize::try_from(end - offset).unwrap_or(usize::MAX).min(reading.chunk());
            let file = file.clone();
            let read = tokio::task::spawn_blocking(move || map_chunk(&file, offset, want)).await;
            let chunk = match read.unwrap_or_else(|panicked| Err(io::Error::other(panicked))) {
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

/// The `want` bytes of `file` at `offset`, mapped, and read from the disk before the mapping is
/// handed over: the writer copies straight from the page cache and never waits for the disk.
fn map_chunk(file: &File, offset: u64, want: usize) -> io::Result<Bytes> {
    let page = page_size();
    let skip = (offset % page) as usize;
    let map_len = skip + want;
    // SAFETY: a fresh read-only mapping of a file; nothing else aliases it. Stored files are
    // written once under a temporary name and never change after the rename, so what is mapped
    // stays valid (an unlinked file stays mapped whole).
    let address = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            file.as_raw_fd(),
            (offset - skip as u64) as libc::off_t,
        )
    };
    if address == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Bytes::from_owner(Mapping { address, map_len }).slice(skip..))
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

/// A read-only file mapping, unmapped when the last `Bytes` of it drops.
struct Mapping {
    address: *mut libc::c_void,
    map_len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `address` maps `map_len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.address.cast(), self.map_len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map_chunk` mapped, once, after the last borrow.
        unsafe { libc::munmap(self.address, self.map_len) };
    }
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
        let size = file.as_file().metadata().unwrap().len();
        let chunks: Vec<Bytes> = chunks(file.reopen().unwrap(), size, start, len).try_collect().await.unwrap();
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
