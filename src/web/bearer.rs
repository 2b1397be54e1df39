//! `Authorization: Bearer <token>` for the machine endpoints (maintenance triggers, metrics).

use poem::{Request, http::header};
use subtle::ConstantTimeEq;

use crate::{
    accounts::tokens::bearer_token,
    secret::{SecretString, sha256_hex},
};

/// Whether the request carries `expected` as its bearer token (never, without one configured).
/// Hashes of both are compared in constant time, so neither the length nor a prefix leaks.
pub fn bearer_matches(req: &Request, expected: Option<&SecretString>) -> bool {
    let Some(expected) = expected else { return false };
    let presented = req.header(header::AUTHORIZATION).and_then(bearer_token).unwrap_or_default();
    let (a, b) = (sha256_hex(presented), sha256_hex(expected.expose()));
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}
