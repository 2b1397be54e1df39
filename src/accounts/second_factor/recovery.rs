//! Recovery codes: ten random one-time codes made when TOTP is set up, for the day the phone is
//! lost. Each is 12 characters from an alphabet without look-alikes (about 59 bits), so a plain
//! SHA-256 is enough to store it: there is nothing to guess offline.

use rand::RngExt;

use crate::secret::{SecretString, sha256_hex};

/// How many codes one set has.
pub const SET_SIZE: usize = 10;
/// No 0/o, 1/l/i: codes are read off paper.
const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
const LENGTH: usize = 12;

/// A new code, shown as `xxxx-xxxx-xxxx`.
pub fn new_code() -> SecretString {
    let mut rng = rand::rng();
    let chars: Vec<u8> = (0..LENGTH).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]).collect();
    let groups: Vec<&str> = chars.chunks(4).map(|c| std::str::from_utf8(c).expect("ASCII")).collect();
    SecretString::new(groups.join("-"))
}

/// What is stored for a code as typed (any case, with or without dashes and spaces); `None` for
/// text that cannot be a code.
pub fn stored_hash(typed: &SecretString) -> Option<String> {
    let normal: String =
        typed.expose().chars().filter(|c| *c != '-' && !c.is_whitespace()).flat_map(char::to_lowercase).collect();
    (normal.len() == LENGTH && normal.bytes().all(|b| ALPHABET.contains(&b))).then(|| sha256_hex(&normal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_recognised_however_it_is_typed() {
        let code = new_code();
        assert_eq!(code.expose().len(), 14);
        let hash = stored_hash(&code).unwrap();
        let typed = SecretString::new(format!(" {} ", code.expose().to_uppercase().replace('-', " ")));
        assert_eq!(stored_hash(&typed), Some(hash));
        assert_eq!(stored_hash(&SecretString::new("0000-0000-0000")), None);
        assert_ne!(new_code(), new_code());
    }
}
