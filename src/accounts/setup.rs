//! The first-run setup link: while no account exists, `watasu serve` makes a one-time token and
//! prints `BASE_URL/setup/TOKEN`; that page creates the first admin. Only the token's hash is
//! kept, in memory: a restart prints a new link, and after use the page is a 404.

use std::sync::Mutex;

use crate::secret::{SecretString, random_token, sha256_hex};

#[derive(Default)]
pub struct SetupGate {
    token_hash: Mutex<Option<String>>,
}

impl SetupGate {
    /// Opens the gate and returns the token for the printed link.
    pub fn open(&self) -> SecretString {
        let token = random_token();
        *self.token_hash.lock().expect("setup lock") = Some(sha256_hex(token.expose()));
        token
    }

    /// True while `token` is the open gate's token.
    pub fn admits(&self, token: &str) -> bool {
        let expected = self.token_hash.lock().expect("setup lock");
        expected
            .as_deref()
            .is_some_and(|hash| subtle::ConstantTimeEq::ct_eq(hash.as_bytes(), sha256_hex(token).as_bytes()).into())
    }

    /// Closes the gate if `token` opens it; true for exactly one caller.
    pub fn consume(&self, token: &str) -> bool {
        let mut expected = self.token_hash.lock().expect("setup lock");
        let matches = expected
            .as_deref()
            .is_some_and(|hash| subtle::ConstantTimeEq::ct_eq(hash.as_bytes(), sha256_hex(token).as_bytes()).into());
        if matches {
            *expected = None;
        }
        matches
    }
}
