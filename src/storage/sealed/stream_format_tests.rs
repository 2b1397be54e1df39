//! The stored format did not change when the cipher moved to `ring`: a file sealed with the `aead`
//! crate's STREAM (`StreamBE32` over `aes-gcm`, as files were sealed before) opens with
//! `open_range`, and `seal` writes the very bytes the `aead` crate writes for the same key and
//! nonce prefix, so they open there too.

use aes_gcm::{
    Aes256Gcm, KeyInit,
    aead::stream::{NewStream, StreamBE32, StreamPrimitive},
};
use futures_util::TryStreamExt;

use super::{format::TAG, *};

type Stream = StreamBE32<Aes256Gcm>;

/// Lengths around the segment boundaries: empty, one byte, one segment exactly, one segment and a
/// byte, three segments and a bit.
const LENGTHS: [usize; 5] = [0, 1, SEGMENT as usize, SEGMENT as usize + 1, 3 * SEGMENT as usize + 1234];

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

fn aead_stream(key: &DataKey, header: Header) -> Stream {
    Stream::from_aead(Aes256Gcm::new_from_slice(key.expose()).unwrap(), &header.nonce_prefix.into())
}

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// The stored bytes of `plain` as the `aead` crate's STREAM seals them.
fn sealed_by_aead(key: &DataKey, header: Header, plain: &[u8]) -> Vec<u8> {
    let stream = aead_stream(key, header);
    let plain_len = plain.len() as u64;
    let segments = header.segments(plain_len);
    let mut stored = header.to_bytes().to_vec();
    for position in 0..segments {
        let start = (position * u64::from(header.segment)) as usize;
        let mut buffer = plain[start..start + header.segment_plain_len(plain_len, position) as usize].to_vec();
        stream.encrypt_in_place(position as u32, position + 1 == segments, &header.to_bytes(), &mut buffer).unwrap();
        stored.extend_from_slice(&buffer);
    }
    stored
}

/// The plaintext of `stored` as the `aead` crate's STREAM opens it.
fn opened_by_aead(key: &DataKey, stored: &[u8], plain_len: u64) -> Vec<u8> {
    let header = Header::parse(&stored[..HEADER_LEN]).unwrap();
    assert_eq!(stored.len() as u64, header.sealed_len(plain_len));
    let stream = aead_stream(key, header);
    let segments = header.segments(plain_len);
    let mut plain = Vec::new();
    for position in 0..segments {
        let start = header.segment_start(position) as usize;
        let end = start + (header.segment_plain_len(plain_len, position) + TAG) as usize;
        let mut buffer = stored[start..end].to_vec();
        stream.decrypt_in_place(position as u32, position + 1 == segments, &header.to_bytes(), &mut buffer).unwrap();
        plain.extend_from_slice(&buffer);
    }
    plain
}

fn sealed(key: &DataKey, plain: &[u8]) -> Vec<u8> {
    let chunks: Vec<bytes::Bytes> = block_on(seal(key, SEGMENT, plain).try_collect()).unwrap();
    chunks.concat()
}

fn opened(key: &DataKey, stored: &[u8], plain_len: u64) -> std::io::Result<Vec<u8>> {
    let header = Header::parse(&stored[..HEADER_LEN]).unwrap();
    let range = header.covering(plain_len, 0, plain_len);
    let body = stored[range.stored_start as usize..].to_vec();
    // Opening runs on a task of its own: inside the runtime.
    let chunks: Vec<bytes::Bytes> =
        block_on(async { open_range(key, header, plain_len, range, std::io::Cursor::new(body)).try_collect().await })?;
    Ok(chunks.concat())
}

#[test]
fn a_file_sealed_with_the_aead_crates_stream_opens() {
    for len in LENGTHS {
        let key = DataKey::generate();
        let plain = plaintext(len);
        let header = Header::new(SEGMENT, rand::random());
        let stored = sealed_by_aead(&key, header, &plain);
        assert_eq!(opened(&key, &stored, len as u64).unwrap(), plain, "{len} bytes");
    }
}

#[test]
fn a_sealed_file_is_byte_for_byte_what_the_aead_crates_stream_writes_and_opens_there() {
    for len in LENGTHS {
        let key = DataKey::generate();
        let plain = plaintext(len);
        let stored = sealed(&key, &plain);
        let header = Header::parse(&stored[..HEADER_LEN]).unwrap();
        assert_eq!(stored, sealed_by_aead(&key, header, &plain), "{len} bytes");
        assert_eq!(opened_by_aead(&key, &stored, len as u64), plain, "{len} bytes");
    }
}

#[test]
fn a_segment_of_a_file_sealed_with_the_aead_crates_stream_still_fails_when_altered() {
    let key = DataKey::generate();
    let plain = plaintext(SEGMENT as usize + 1);
    let mut stored = sealed_by_aead(&key, Header::new(SEGMENT, rand::random()), &plain);
    let last = stored.len() - 1;
    stored[last] ^= 1;
    assert!(Damaged::is(&opened(&key, &stored, plain.len() as u64).unwrap_err()));
}
