//! Sealing and opening a file's segments with STREAM over AES-256-GCM (`ring`'s cipher, the
//! nonce composed as the `aead` crate's `StreamBE32` does, so files sealed before stay readable):
//! sealing reads one segment at a time from the plaintext, so memory stays flat however large the
//! file; opening decrypts only the segments covering the asked range and yields exactly its bytes,
//! or an error (`Damaged`) where a segment does not authenticate — never its bytes.

use std::io;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use rand::Rng;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use tokio::{
    io::{AsyncRead, AsyncReadExt},
    sync::mpsc,
};

use super::{
    super::read_ahead,
    DataKey,
    format::{Covering, Damaged, HEADER_LEN, Header, NONCE_PREFIX, TAG},
};

fn cipher_for(key: &DataKey) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key.expose()).expect("a 32-byte key"))
}

/// The nonce of segment `position` of a file: STREAM (Hoang, Reyhanitabar, Rogaway, Vizár 2015) as
/// the `aead` crate's `StreamBE32` composes it — the file's prefix ‖ the position, u32 big-endian
/// ‖ 1 on the last segment, 0 before. Every stored file depends on these bytes staying as they are.
fn segment_nonce(prefix: [u8; NONCE_PREFIX], position: u32, last: bool) -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    nonce[..NONCE_PREFIX].copy_from_slice(&prefix);
    nonce[NONCE_PREFIX..NONCE_LEN - 1].copy_from_slice(&position.to_be_bytes());
    nonce[NONCE_LEN - 1] = u8::from(last);
    nonce
}

/// The stored bytes of `plain` sealed under `key`: the header, then each segment with its tag.
/// Plaintext errors pass through as they are (the sender's side).
pub fn seal<'a>(key: &DataKey, segment: u32, plain: impl AsyncRead + Send + 'a) -> BoxStream<'a, io::Result<Bytes>> {
    let mut nonce_prefix = [0u8; NONCE_PREFIX];
    rand::rng().fill_bytes(&mut nonce_prefix);
    let header = Header::new(segment, nonce_prefix);
    let state =
        Sealing { cipher: cipher_for(key), header, plain: Box::pin(plain), next: None, position: 0, done: false };
    let header_bytes = Bytes::copy_from_slice(&header.to_bytes());
    stream::once(async move { Ok(header_bytes) })
        .chain(stream::try_unfold(state, |mut state| async move {
            if state.done {
                return Ok(None);
            }
            let sealed = state.next_segment().await?;
            Ok(Some((sealed, state)))
        }))
        .boxed()
}

struct Sealing<'a> {
    cipher: LessSafeKey,
    header: Header,
    plain: std::pin::Pin<Box<dyn AsyncRead + Send + 'a>>,
    /// The byte read past the previous segment (reading one more byte is how a segment learns it
    /// is not the last).
    next: Option<u8>,
    position: u32,
    done: bool,
}

impl Sealing<'_> {
    async fn next_segment(&mut self) -> io::Result<Bytes> {
        let segment = self.header.segment as usize;
        // One allocation per segment, handed on as it is: the segment, the byte past it, its tag.
        let mut buffer = Vec::with_capacity(segment + 1 + TAG as usize);
        buffer.extend(self.next.take());
        while buffer.len() <= segment {
            let read = (&mut self.plain).take((segment + 1 - buffer.len()) as u64).read_buf(&mut buffer).await?;
            if read == 0 {
                break;
            }
        }
        let last = buffer.len() <= segment;
        if !last {
            self.next = buffer.pop();
        }
        let nonce = segment_nonce(self.header.nonce_prefix, self.position, last);
        let tag = self
            .cipher
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(self.header.to_bytes()),
                &mut buffer,
            )
            .map_err(|_| io::Error::other("a segment could not be sealed"))?;
        buffer.extend_from_slice(tag.as_ref());
        self.position = self.position.checked_add(1).ok_or_else(|| io::Error::other("a file too large to seal"))?;
        self.done = last;
        Ok(Bytes::from(buffer))
    }
}

/// Reads and checks the header at the start of a stored file.
pub async fn read_header(stored: &mut (impl AsyncRead + Unpin)) -> io::Result<Header> {
    let mut bytes = [0u8; HEADER_LEN];
    stored
        .read_exact(&mut bytes)
        .await
        .map_err(|e| if e.kind() == io::ErrorKind::UnexpectedEof { Damaged.into_io() } else { e })?;
    Header::parse(&bytes).map_err(Damaged::into_io)
}

/// The plaintext of `range`, from `stored`: the stored bytes of `range.stored_start ..` (as many as
/// `range.stored_len`), each segment authenticated before any of its bytes is yielded. A stored
/// file shorter than the recorded length is `Damaged` too. Segments are opened a batch at a time
/// on a task of their own, one batch ahead, so the next batch is decrypted on one core while the
/// one before is written on another.
pub fn open_range(
    key: &DataKey,
    header: Header,
    plain_len: u64,
    range: Covering,
    stored: impl AsyncRead + Send + 'static,
) -> BoxStream<'static, io::Result<Bytes>> {
    open_in_batches(key, header, plain_len, range, stored, read_ahead::chunk_bytes)
}

/// `open_range` with batches of about `batch_bytes()` plaintext bytes, asked before each batch.
pub(super) fn open_in_batches(
    key: &DataKey,
    header: Header,
    plain_len: u64,
    range: Covering,
    stored: impl AsyncRead + Send + 'static,
    batch_bytes: fn() -> usize,
) -> BoxStream<'static, io::Result<Bytes>> {
    let mut state = Opening {
        cipher: cipher_for(key),
        header,
        plain_len,
        stored: Box::pin(stored),
        index: range.first_segment,
        skip: range.skip,
        left: range.len,
    };
    // Three batches at most per download: one decrypted, one waiting, one being written.
    let (sender, receiver) = mpsc::channel(1);
    tokio::spawn(async move {
        while state.left > 0 {
            let batch = state.next_batch(batch_bytes() as u64).await;
            let failed = batch.is_err();
            // Refused once the response is dropped (the client went away): stop opening.
            if sender.send(batch).await.is_err() || failed {
                return;
            }
        }
    });
    stream::unfold(receiver, |mut receiver| async move { Some((receiver.recv().await?, receiver)) }).boxed()
}

struct Opening {
    cipher: LessSafeKey,
    header: Header,
    plain_len: u64,
    stored: std::pin::Pin<Box<dyn AsyncRead + Send>>,
    /// The next segment to open.
    index: u64,
    /// Plaintext bytes of the next segment before the range.
    skip: u64,
    /// Plaintext bytes of the range not yielded yet.
    left: u64,
}

impl Opening {
    /// The range's plaintext in the next segments, about `batch` bytes of them (at least one
    /// segment): read in one go, each segment authenticated, the tags squeezed out.
    async fn next_batch(&mut self, batch: u64) -> io::Result<Bytes> {
        let segments = self.header.segments(self.plain_len);
        let wanted = self.skip + self.left;
        let mut lens = Vec::new();
        let mut plain: u64 = 0;
        let mut index = self.index;
        while index < segments && plain < wanted && (lens.is_empty() || plain + u64::from(self.header.segment) <= batch)
        {
            let len = self.header.segment_plain_len(self.plain_len, index);
            lens.push(len as usize);
            plain += len;
            index += 1;
        }
        if lens.is_empty() {
            return Err(Damaged.into_io());
        }
        let tag = TAG as usize;
        let mut buffer = vec![0u8; lens.iter().map(|len| len + tag).sum()];
        self.stored
            .read_exact(&mut buffer)
            .await
            .map_err(|e| if e.kind() == io::ErrorKind::UnexpectedEof { Damaged.into_io() } else { e })?;
        let (mut read_at, mut write_at) = (0, 0);
        for len in lens {
            let last = self.index + 1 == segments;
            let position = u32::try_from(self.index).map_err(|_| Damaged.into_io())?;
            let nonce = segment_nonce(self.header.nonce_prefix, position, last);
            self.cipher
                .open_in_place(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(self.header.to_bytes()),
                    &mut buffer[read_at..read_at + len + tag],
                )
                .map_err(|_| Damaged.into_io())?;
            buffer.copy_within(read_at..read_at + len, write_at);
            (read_at, write_at) = (read_at + len + tag, write_at + len);
            self.index += 1;
        }
        buffer.truncate(write_at);
        let plain = Bytes::from(buffer);
        let from = std::mem::take(&mut self.skip).min(plain.len() as u64) as usize;
        let to = (from as u64 + self.left).min(plain.len() as u64) as usize;
        self.left -= (to - from) as u64;
        Ok(plain.slice(from..to))
    }
}
