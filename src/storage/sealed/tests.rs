use futures_util::TryStreamExt;
use proptest::prelude::*;

use super::{segments::open_in_batches, *};

/// The smallest segment a header allows, so small plaintexts span many segments.
const SMALL: u32 = 4096;

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

async fn sealed(key: &DataKey, plain: &[u8]) -> Vec<u8> {
    let chunks: Vec<bytes::Bytes> = seal(key, SMALL, plain.to_vec().as_slice()).try_collect().await.unwrap();
    chunks.concat()
}

/// What opening `len` bytes from `start` of the stored bytes yields, reading only the covering
/// segments (as a ranged GET would hand them over), in batches of two segments (and a bit, which
/// is not a whole segment more), so that every range crosses batches.
async fn opened(key: &DataKey, stored: &[u8], plain_len: u64, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let header = read_header(&mut &stored[..]).await?;
    let range = header.covering(plain_len, start, len);
    let from = (range.stored_start as usize).min(stored.len());
    let to = ((range.stored_start + range.stored_len) as usize).min(stored.len());
    let chunks: Vec<bytes::Bytes> =
        open_in_batches(key, header, plain_len, range, std::io::Cursor::new(stored[from..to].to_vec()), || {
            2 * SMALL as usize + 100
        })
        .try_collect()
        .await?;
    Ok(chunks.concat())
}

#[test]
fn a_sealed_file_is_as_long_as_its_header_says_and_holds_no_plaintext() {
    let key = DataKey::generate();
    let plain = b"plaintext marker ".repeat(1000);
    let stored = block_on(sealed(&key, &plain));
    let header = Header::parse(&stored[..HEADER_LEN]).unwrap();
    assert_eq!(stored.len() as u64, header.sealed_len(plain.len() as u64));
    assert!(!stored.windows(16).any(|w| w == b"plaintext marker"));
}

#[test]
fn an_empty_file_seals_to_one_segment_that_still_proves_its_end() {
    let key = DataKey::generate();
    let stored = block_on(sealed(&key, b""));
    assert_eq!(stored.len(), HEADER_LEN + 16);
    assert_eq!(block_on(opened(&key, &stored, 0, 0, u64::MAX)).unwrap(), b"");
}

#[test]
fn another_key_does_not_open_a_file() {
    let plain = vec![5u8; 10_000];
    let stored = block_on(sealed(&DataKey::generate(), &plain));
    let error = block_on(opened(&DataKey::generate(), &stored, 10_000, 0, 10)).unwrap_err();
    assert!(Damaged::is(&error));
}

#[test]
fn a_file_cut_at_a_segment_boundary_does_not_open() {
    let key = DataKey::generate();
    let plain = vec![9u8; 3 * SMALL as usize];
    let stored = block_on(sealed(&key, &plain));
    let cut = &stored[..HEADER_LEN + 2 * (SMALL as usize + 16)];
    // Whoever reads it believes it is two segments long: the second was not sealed as the last.
    let error = block_on(opened(&key, cut, 2 * u64::from(SMALL), 0, u64::MAX)).unwrap_err();
    assert!(Damaged::is(&error));
}

#[test]
fn swapped_segments_do_not_open() {
    let key = DataKey::generate();
    let plain: Vec<u8> = (0..3 * SMALL).map(|i| (i % 251) as u8).collect();
    let mut stored = block_on(sealed(&key, &plain));
    let (a, b) = (HEADER_LEN, HEADER_LEN + SMALL as usize + 16);
    let first: Vec<u8> = stored[a..b].to_vec();
    let second: Vec<u8> = stored[b..b + (b - a)].to_vec();
    stored[a..b].copy_from_slice(&second);
    stored[b..b + (b - a)].copy_from_slice(&first);
    assert!(Damaged::is(&block_on(opened(&key, &stored, plain.len() as u64, 0, u64::MAX)).unwrap_err()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_range_of_any_plaintext_opens_to_its_bytes(
        plain in proptest::collection::vec(any::<u8>(), 0..5 * SMALL as usize),
        start in 0u64..6 * u64::from(SMALL),
        len in 0u64..6 * u64::from(SMALL),
    ) {
        let key = DataKey::generate();
        let stored = block_on(sealed(&key, &plain));
        let got = block_on(opened(&key, &stored, plain.len() as u64, start, len)).unwrap();
        let from = (start as usize).min(plain.len());
        let to = (start.saturating_add(len) as usize).min(plain.len());
        prop_assert_eq!(got, plain[from..to].to_vec());
    }

    #[test]
    fn any_flipped_byte_or_cut_fails_and_never_yields_other_bytes(
        plain in proptest::collection::vec(any::<u8>(), 1..3 * SMALL as usize),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
        cut in any::<bool>(),
    ) {
        let key = DataKey::generate();
        let mut stored = block_on(sealed(&key, &plain));
        let at = at.index(stored.len());
        if cut {
            stored.truncate(at);
        } else {
            stored[at] ^= 1 << bit;
        }
        let result = block_on(opened(&key, &stored, plain.len() as u64, 0, u64::MAX));
        prop_assert!(result.as_ref().is_err_and(Damaged::is), "opened to {} bytes", result.map(|r| r.len()).unwrap_or(0));
    }
}
