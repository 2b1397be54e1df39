//! The archive's bytes `start..end` as a download sends them: records from memory, and each
//! file's part opened from the store only when its turn comes (one ranged read, one GET on an
//! object store), so memory stays a chunk deep however large the bundle.

use std::{io, sync::Arc};

use bytes::Bytes;
use futures_util::{
    StreamExt, TryStreamExt,
    stream::{self, BoxStream},
};

use super::{Layout, Piece};
use crate::storage::FileStore;

/// The bytes of `layout` from `start` to `end` (exclusive); `keys[i]` is where entry `i` is
/// stored. A stored file shorter than its entry ends the stream with an error rather than
/// sending an archive whose offsets no longer hold.
pub fn archive_bytes(
    layout: &Layout,
    start: u64,
    end: u64,
    store: Arc<dyn FileStore>,
    keys: Arc<[String]>,
) -> BoxStream<'static, io::Result<Bytes>> {
    stream::iter(layout.range(start, end))
        .then(move |piece| {
            let (store, keys) = (store.clone(), keys.clone());
            async move {
                match piece {
                    Piece::Records(bytes) => Ok::<_, io::Error>(stream::once(async { Ok(bytes) }).boxed()),
                    Piece::File { entry, offset, len } => {
                        let opened = store.open_range(&keys[entry], offset, len).await.map_err(io::Error::other)?;
                        Ok(exactly(opened.into_chunks(), len))
                    }
                }
            }
        })
        .try_flatten()
        .boxed()
}

/// `chunks` as long as they bring `len` bytes in all; an error if they end before.
fn exactly(chunks: BoxStream<'static, io::Result<Bytes>>, len: u64) -> BoxStream<'static, io::Result<Bytes>> {
    stream::unfold((chunks, len), |(mut chunks, remaining)| async move {
        match chunks.next().await {
            Some(Ok(chunk)) => {
                let chunk = chunk.slice(..chunk.len().min(usize::try_from(remaining).unwrap_or(usize::MAX)));
                let left = remaining - chunk.len() as u64;
                Some((Ok(chunk), (chunks, left)))
            }
            Some(Err(error)) => Some((Err(error), (stream::empty().boxed(), 0))),
            None if remaining > 0 => {
                let short = io::Error::new(io::ErrorKind::UnexpectedEof, "a stored file is shorter than its entry");
                Some((Err(short), (stream::empty().boxed(), 0)))
            }
            None => None,
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDateTime;

    use super::*;
    use crate::{storage::LocalFileStore, zip::Entry};

    async fn stored(store: &LocalFileStore, name: &str, content: &[u8]) -> (Entry, String) {
        let file = store.put(Box::pin(std::io::Cursor::new(content.to_vec())), u64::MAX).await.unwrap();
        let modified = NaiveDateTime::parse_from_str("2026-12-03 09:30:00", "%Y-%m-%d %H:%M:%S").unwrap();
        let entry =
            Entry { name: name.to_owned(), size: file.size_bytes, crc32: file.crc32, modified, sha256: file.sha256 };
        (entry, file.key)
    }

    async fn collect(stream: BoxStream<'static, io::Result<Bytes>>) -> io::Result<Vec<u8>> {
        stream
            .try_fold(Vec::new(), |mut all, chunk| async move {
                all.extend_from_slice(&chunk);
                Ok(all)
            })
            .await
    }

    #[tokio::test]
    async fn any_range_streams_the_same_bytes_as_the_whole_archive_cut_there() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(LocalFileStore::new(dir.path()).unwrap());
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        let (a, key_a) = stored(&store, "a.bin", &big).await;
        let (b, key_b) = stored(&store, "b.txt", b"second").await;
        let layout = Layout::new(&[a, b]);
        let keys: Arc<[String]> = vec![key_a, key_b].into();
        let whole = collect(archive_bytes(&layout, 0, layout.len(), store.clone(), keys.clone())).await.unwrap();
        assert_eq!(whole.len() as u64, layout.len());
        assert_eq!(&whole[whole.len() - 22..whole.len() - 18], &[0x50, 0x4b, 5, 6], "ends with the end record");
        for (start, end) in [(0, 1), (10, 1_000_000), (1_500_000, layout.len() - 3), (layout.len() - 1, layout.len())] {
            let part = collect(archive_bytes(&layout, start, end, store.clone(), keys.clone())).await.unwrap();
            assert!(part == whole[start as usize..end as usize], "range {start}..{end}");
        }
    }

    #[tokio::test]
    async fn a_stored_file_shorter_than_its_entry_ends_the_stream_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(LocalFileStore::new(dir.path()).unwrap());
        let (mut entry, key) = stored(&store, "a.txt", b"four").await;
        entry.size = 10;
        let layout = Layout::new(&[entry]);
        let error = collect(archive_bytes(&layout, 0, layout.len(), store, vec![key].into())).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }
}
