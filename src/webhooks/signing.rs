//! Standard Webhooks signing (<https://www.standardwebhooks.com/>): an endpoint's secret in the
//! spec's `whsec_<base64>` form, and the `webhook-signature` header, an HMAC-SHA256 of
//! `{id}.{timestamp}.{body}` keyed with the secret's decoded bytes.

use base64::{Engine, engine::general_purpose::STANDARD};
use hmac::{KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;

/// The spec's prefix of a secret.
const PREFIX: &str = "whsec_";
/// Random bytes of a new secret (the spec asks for 24 to 64).
const SECRET_BYTES: usize = 32;

/// An endpoint's signing secret. Shown once when made; its `Debug` prints `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret([redacted])")
    }
}

impl WebhookSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = [0u8; SECRET_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!("{PREFIX}{}", STANDARD.encode(bytes)))
    }

    /// A stored secret read back; `None` when it is not in the spec's form.
    pub fn parse(text: &str) -> Option<Self> {
        let key = STANDARD.decode(text.strip_prefix(PREFIX)?).ok()?;
        (24..=64).contains(&key.len()).then(|| Self(text.to_owned()))
    }

    /// The secret as the person who registered the endpoint sees it, once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    fn key(&self) -> Vec<u8> {
        STANDARD.decode(&self.0[PREFIX.len()..]).expect("checked when made or parsed")
    }

    /// `v1,<base64 signature>` of one message.
    pub fn sign(&self, message_id: &str, timestamp: i64, body: &str) -> String {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.key()).expect("HMAC takes any key length");
        mac.update(format!("{message_id}.{timestamp}.{body}").as_bytes());
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` header: one signature per secret still in force (the current one
/// first, then the one before a rotation during its overlap), space-separated.
pub fn signature_header(secrets: &[WebhookSecret], message_id: &str, timestamp: i64, body: &str) -> String {
    secrets.iter().map(|secret| secret.sign(message_id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_secret_is_whsec_and_base64_of_32_random_bytes() {
        let secret = WebhookSecret::generate();
        assert!(secret.expose().starts_with("whsec_"));
        assert_eq!(secret.key().len(), 32);
        assert_ne!(secret, WebhookSecret::generate());
        assert_eq!(WebhookSecret::parse(secret.expose()), Some(secret.clone()));
        assert_eq!(format!("{secret:?}"), "WebhookSecret([redacted])");
    }

    #[test]
    fn secrets_outside_the_specs_form_are_refused() {
        assert_eq!(WebhookSecret::parse("whsec_!!"), None);
        assert_eq!(WebhookSecret::parse(&STANDARD.encode([1u8; 32])), None);
        assert_eq!(WebhookSecret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 16]))), None);
    }

    /// The example of the spec's reference libraries.
    #[test]
    fn the_signature_matches_the_specs_reference_example() {
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn during_an_overlap_both_signatures_are_sent_space_separated() {
        let (new, old) = (WebhookSecret::generate(), WebhookSecret::generate());
        let header = signature_header(&[new.clone(), old.clone()], "msg_1", 5, "{}");
        assert_eq!(header, format!("{} {}", new.sign("msg_1", 5, "{}"), old.sign("msg_1", 5, "{}")));
    }
}
