//! RFC 6238 codes (SHA-1, 6 digits, 30-second steps, one step of drift either way) and what an
//! authenticator app needs to be set up: the secret in base32, its `otpauth://` URI, and that URI
//! as a QR code drawn in SVG on the server.

use qrcode::{QrCode, render::svg};
use rand::Rng;
use totp_rs::{Builder, Secret, Totp};

use crate::secret::SecretString;

/// Seconds in one step.
pub const STEP_SECS: u64 = 30;
/// The name authenticator apps show above the code.
const ISSUER: &str = "watasu";

/// A fresh 160-bit secret (the length RFC 4226 recommends).
pub fn new_secret() -> [u8; 20] {
    let mut bytes = [0u8; 20];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

fn totp(secret: &[u8]) -> Totp {
    let bytes: [u8; 20] = secret.try_into().expect("TOTP secrets are 20 bytes");
    Builder::new().with_secret(Secret::new_stack(bytes)).build().expect("RFC 6238 parameters with a 160-bit secret")
}

/// The seconds since the Unix epoch by this machine's clock, which authenticator apps also follow.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The step `code` belongs to, if it is right for the step of `now` or one either side. Anything
/// but six digits (spaces allowed, as apps show `123 456`) is simply wrong.
pub fn matching_step(secret: &[u8], code: &SecretString, now: u64) -> Option<i64> {
    let digits: String = code.expose().chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    totp(secret).check(&digits, now).and_then(|step| i64::try_from(step).ok())
}

/// Whether `code` looks like an authenticator code (six digits) rather than a recovery code.
pub fn looks_like_totp(code: &str) -> bool {
    let digits: Vec<u8> = code.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits.len() == 6 && digits.iter().all(u8::is_ascii_digit)
}

/// What the enrolment page shows: the secret for typing, and the URI as a QR code.
pub struct Provisioning {
    /// Base32 in groups of four, as apps accept it typed.
    pub secret_text: SecretString,
    /// `<svg …>` markup, with no XML prologue, to place inline.
    pub qr_svg: String,
}

pub fn provisioning(secret: &[u8], account: &str) -> Provisioning {
    let base32 = totp(secret).secret().to_base32();
    let label: String = url::form_urlencoded::byte_serialize(format!("{ISSUER}:{account}").as_bytes()).collect();
    let uri = format!("otpauth://totp/{label}?secret={base32}&issuer={ISSUER}&algorithm=SHA1&digits=6&period=30");
    let qr = QrCode::new(uri.as_bytes()).expect("an otpauth URI fits in a QR code");
    let drawn = qr.render::<svg::Color<'_>>().min_dimensions(200, 200).quiet_zone(true).build();
    let qr_svg = match drawn.find("<svg") {
        Some(start) => drawn[start..].to_owned(),
        None => drawn,
    };
    let grouped: Vec<String> = base32.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    Provisioning { secret_text: SecretString::new(grouped.join(" ")), qr_svg }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B's SHA-1 secret, and its 8-digit values cut to the 6 we use.
    const RFC_SECRET: &[u8; 20] = b"12345678901234567890";

    #[test]
    fn codes_match_the_rfc_test_vectors_within_one_step() {
        let code = SecretString::new("287082");
        assert_eq!(matching_step(RFC_SECRET, &code, 59), Some(1));
        assert_eq!(matching_step(RFC_SECRET, &code, 89), Some(1), "one step later");
        assert_eq!(matching_step(RFC_SECRET, &code, 91), None, "two steps later");
        assert_eq!(matching_step(RFC_SECRET, &SecretString::new("287 082"), 59), Some(1));
        assert_eq!(matching_step(RFC_SECRET, &SecretString::new("28708"), 59), None);
        assert_eq!(matching_step(RFC_SECRET, &SecretString::new("28708a"), 59), None);
    }

    #[test]
    fn the_qr_code_is_bare_svg_and_the_secret_is_grouped_base32() {
        let shown = provisioning(RFC_SECRET, "a@example.test");
        assert!(shown.qr_svg.starts_with("<svg"), "{}", &shown.qr_svg[..40]);
        assert_eq!(shown.secret_text.expose(), "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ");
        assert!(looks_like_totp("123 456") && !looks_like_totp("abcd-efgh-jkmn"));
    }
}
