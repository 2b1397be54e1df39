//! A stored file opened for reading, as the store yields it best: the local store hands over
//! chunks its read-ahead thread already filled, the object store the chunks of its GET. The web
//! layer streams those chunks as they are; everything else reads them through `AsyncRead`.

use std::{io, pin::Pin};

use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use tokio::io::AsyncRead;
use tokio_util::io::{ReaderStream, StreamReader};

/// Bytes per chunk when a plain reader has to be turned into chunks.
const READER_CHUNK: usize = 256 * 1024;

/// A stored file opened for reading (from `open`, all of it; from `open_range`, the range only).
pub struct OpenedFile {
    content: Content,
    /// The size of the whole stored file, whatever part the content yields.
    pub size_bytes: u64,
}

enum Content {
    Reader(Pin<Box<dyn AsyncRead + Send>>),
    Chunks(BoxStream<'static, io::Result<Bytes>>),
}

impl OpenedFile {
    pub fn from_reader(reader: Pin<Box<dyn AsyncRead + Send>>, size_bytes: u64) -> Self {
        Self { content: Content::Reader(reader), size_bytes }
    }

    pub fn from_chunks(chunks: BoxStream<'static, io::Result<Bytes>>, size_bytes: u64) -> Self {
        Self { content: Content::Chunks(chunks), size_bytes }
    }

    /// Nothing to read (a range past the end).
    pub fn empty(size_bytes: u64) -> Self {
        Self::from_reader(Box::pin(tokio::io::empty()), size_bytes)
    }

    pub fn into_reader(self) -> Pin<Box<dyn AsyncRead + Send>> {
        match self.content {
            Content::Reader(reader) => reader,
            Content::Chunks(chunks) => Box::pin(StreamReader::new(chunks)),
        }
    }

    /// The content as chunks, without copying what already comes in chunks.
    pub fn into_chunks(self) -> BoxStream<'static, io::Result<Bytes>> {
        match self.content {
            Content::Reader(reader) => ReaderStream::with_capacity(reader, READER_CHUNK).boxed(),
            Content::Chunks(chunks) => chunks,
        }
    }
}
