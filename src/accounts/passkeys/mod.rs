//! Passkeys (WebAuthn, through `webauthn-rs`): registering one on an account, and the two
//! ceremonies that use one, a sign-in on its own (the browser offers the account's passkey and
//! nothing is typed) and the second factor after a password. Every passkey verifies its person
//! (user verification is required), so it is a multi-factor sign-in by itself.
//!
//! The relying party is the host of `WATASU_BASE_URL` and only its exact origin is accepted. A
//! base URL on an IP address has no relying party (WebAuthn needs a domain): passkeys are then
//! unavailable and say so.

mod ceremony;

use std::sync::Arc;

use hmac::{KeyInit, Mac};
use url::Url;
use webauthn_rs::prelude::{
    CreationChallengeResponse, DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential, RequestChallengeResponse, Uuid, Webauthn, WebauthnBuilder,
};
use webauthn_rs_proto::ResidentKeyRequirement;

use ceremony::Ceremonies;
pub use ceremony::Ceremony;

use crate::{
    db::{Db, Dialect, Sql, Timestamp, is_unique_violation},
    on_db,
    secret::SecretKey,
    sql,
};

/// The longest label, in characters.
const NAME_MAX: usize = 64;

/// A passkey's label as its owner typed it: one line, 1 to 64 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasskeyName(String);

impl PasskeyName {
    pub fn parse(text: &str) -> Option<Self> {
        let name = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let fits = (1..=NAME_MAX).contains(&name.chars().count());
        (fits && !name.chars().any(char::is_control)).then_some(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A passkey as its owner's account page lists it.
#[derive(Debug, sqlx::FromRow)]
pub struct PasskeyEntry {
    pub id: i64,
    pub name: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    /// The base URL has no domain to be a relying party.
    #[error("passkeys are unavailable on this address")]
    Unavailable,
    /// No ceremony of this kind waits on this session (never started, expired, or used already).
    #[error("no ceremony waiting")]
    NoCeremony,
    /// The browser's answer did not verify (wrong origin or challenge, bad signature, another
    /// account's passkey, an unknown or removed one, a counter that went back, malformed data).
    #[error("passkey refused: {0}")]
    Refused(String),
    /// This passkey is registered already (on this account or another).
    #[error("passkey registered already")]
    Taken,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Stored(#[from] serde_json::Error),
}

/// The passkeys table and the relying party that checks them.
#[derive(Clone)]
pub struct Passkeys {
    db: Db,
    relying_party: Option<Arc<Webauthn>>,
    ceremonies: Ceremonies,
    handle_key: [u8; 32],
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkeys").field("available", &self.relying_party.is_some()).finish()
    }
}

const LIST: &str = "SELECT id, name, created_at, last_used_at FROM passkeys WHERE user_id = $1 ORDER BY created_at, id";
const CREDENTIAL_IDS: &str = "SELECT credential_id FROM passkeys WHERE user_id = $1";
const KEYS_OF: &str = "SELECT passkey FROM passkeys WHERE user_id = $1";
/// A passkey by the credential the browser answered with, of an active account only.
const BY_CREDENTIAL: &str = "SELECT p.id, p.user_id, p.passkey FROM passkeys p JOIN users u ON u.id = p.user_id
      WHERE p.credential_id = $1 AND u.disabled_at IS NULL";
const ADD: &str = "INSERT INTO passkeys (user_id, credential_id, name, passkey) VALUES ($1, $2, $3, $4)";
const USED: Sql = sql!("UPDATE passkeys SET passkey = $2, last_used_at = " now " WHERE id = $1");
const REMOVE: &str = "DELETE FROM passkeys WHERE id = $1 AND user_id = $2";

impl Passkeys {
    /// The relying party of `base_url` (none on an IP address or without a host).
    pub fn new(db: Db, base_url: &Url, secret: &SecretKey) -> Self {
        let relying_party = relying_party(base_url).map(Arc::new);
        Self {
            ceremonies: Ceremonies::new(db.clone()),
            db,
            relying_party,
            handle_key: secret.derive(crate::secret::Purpose::PasskeyHandle),
        }
    }

    /// Whether this address can have passkeys at all.
    pub fn available(&self) -> bool {
        self.relying_party.is_some()
    }

    fn relying_party(&self) -> Result<&Webauthn, PasskeyError> {
        self.relying_party.as_deref().ok_or(PasskeyError::Unavailable)
    }

    /// The account's stable, opaque id in every passkey made for it: the same for all its passkeys
    /// (an authenticator keeps one per account and site), and telling nothing about the account.
    fn user_handle(&self, user_id: i64) -> Uuid {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.handle_key).expect("any key length");
        mac.update(&user_id.to_be_bytes());
        let digest = mac.finalize().into_bytes();
        Uuid::from_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
    }

    /// Whether the account has any passkey.
    pub async fn any(&self, user_id: i64) -> Result<bool, sqlx::Error> {
        const ANY: &str = "SELECT EXISTS (SELECT 1 FROM passkeys WHERE user_id = $1)";
        on_db!(&self.db, |pool| sqlx::query_scalar(ANY).bind(user_id).fetch_one(pool).await)
    }

    pub async fn list(&self, user_id: i64) -> Result<Vec<PasskeyEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(LIST).bind(user_id).fetch_all(pool).await)
    }

    async fn keys_of(&self, user_id: i64) -> Result<Vec<Passkey>, PasskeyError> {
        let stored: Vec<String> =
            on_db!(&self.db, |pool| sqlx::query_scalar(KEYS_OF).bind(user_id).fetch_all(pool).await?);
        Ok(stored.iter().map(|json| serde_json::from_str(json)).collect::<Result<_, _>>()?)
    }

    /// Starts registering a passkey for the account: the options for the browser. The browser is
    /// asked for a discoverable credential, so that the passkey can later sign in without an
    /// address typed; the account's own passkeys are excluded (no second copy on one device).
    pub async fn start_registration(
        &self,
        session_id: i64,
        user_id: i64,
        email: &str,
        display_name: &str,
    ) -> Result<CreationChallengeResponse, PasskeyError> {
        let relying_party = self.relying_party()?;
        let existing: Vec<Vec<u8>> =
            on_db!(&self.db, |pool| sqlx::query_scalar(CREDENTIAL_IDS).bind(user_id).fetch_all(pool).await?);
        let exclude = (!existing.is_empty()).then_some(existing);
        let (mut options, state) = relying_party
            .start_passkey_registration(self.user_handle(user_id), email, display_name, exclude)
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        if let Some(selection) = options.public_key.authenticator_selection.as_mut() {
            selection.resident_key = Some(ResidentKeyRequirement::Preferred);
        }
        self.ceremonies.begin(session_id, Ceremony::Register, Some(user_id), &state).await?;
        Ok(options)
    }

    /// Finishes the registration the session started for `user_id` with the browser's answer.
    pub async fn finish_registration(
        &self,
        session_id: i64,
        user_id: i64,
        name: &PasskeyName,
        answer: &str,
    ) -> Result<(), PasskeyError> {
        let relying_party = self.relying_party()?;
        let state: PasskeyRegistration = self.ceremonies.take(session_id, Ceremony::Register, Some(user_id)).await?;
        let answer: RegisterPublicKeyCredential = parse_answer(answer)?;
        let passkey = relying_party
            .finish_passkey_registration(&answer, &state)
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        let stored = serde_json::to_string(&passkey)?;
        let added = on_db!(&self.db, |pool| {
            sqlx::query(ADD)
                .bind(user_id)
                .bind(passkey.cred_id().clone())
                .bind(name.as_str())
                .bind(stored)
                .execute(pool)
                .await
                .map(drop)
        });
        match added {
            Ok(_) => Ok(()),
            Err(error) if is_unique_violation(&error) => Err(PasskeyError::Taken),
            Err(error) => Err(error.into()),
        }
    }

    /// Starts a sign-in with a passkey alone: the browser lets the person pick one of theirs.
    pub async fn start_sign_in(&self, session_id: i64) -> Result<RequestChallengeResponse, PasskeyError> {
        let (mut options, state): (_, DiscoverableAuthentication) = self
            .relying_party()?
            .start_discoverable_authentication()
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        // A button starts it, so the browser's own dialog, not the address field's suggestions.
        options.mediation = None;
        self.ceremonies.begin(session_id, Ceremony::SignIn, None, &state).await?;
        Ok(options)
    }

    /// Finishes a sign-in with a passkey alone: the account whose passkey answered.
    pub async fn finish_sign_in(&self, session_id: i64, answer: &str) -> Result<i64, PasskeyError> {
        let relying_party = self.relying_party()?;
        let state: DiscoverableAuthentication = self.ceremonies.take(session_id, Ceremony::SignIn, None).await?;
        let answer: PublicKeyCredential = parse_answer(answer)?;
        let (handle, credential_id) = relying_party
            .identify_discoverable_authentication(&answer)
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        let (id, user_id, mut passkey) = self.by_credential(credential_id).await?;
        if handle != self.user_handle(user_id) {
            return Err(PasskeyError::Refused("the answer names another account".into()));
        }
        let result = relying_party
            .finish_discoverable_authentication_v2(&answer, state, &passkey)
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        passkey.update_credential(&result);
        self.used(id, &passkey).await?;
        Ok(user_id)
    }

    /// Starts the second factor of `user_id`'s pending sign-in; `None` when it has no passkey.
    pub async fn start_second_factor(
        &self,
        session_id: i64,
        user_id: i64,
    ) -> Result<Option<RequestChallengeResponse>, PasskeyError> {
        let relying_party = self.relying_party()?;
        let keys = self.keys_of(user_id).await?;
        if keys.is_empty() {
            return Ok(None);
        }
        let (options, state): (_, PasskeyAuthentication) =
            relying_party.start_passkey_authentication(&keys).map_err(|e| PasskeyError::Refused(e.to_string()))?;
        self.ceremonies.begin(session_id, Ceremony::SecondFactor, Some(user_id), &state).await?;
        Ok(Some(options))
    }

    /// Finishes the second factor with one of `user_id`'s own passkeys.
    pub async fn finish_second_factor(&self, session_id: i64, user_id: i64, answer: &str) -> Result<(), PasskeyError> {
        let relying_party = self.relying_party()?;
        let state: PasskeyAuthentication =
            self.ceremonies.take(session_id, Ceremony::SecondFactor, Some(user_id)).await?;
        let answer: PublicKeyCredential = parse_answer(answer)?;
        let (id, owner, mut passkey) = self.by_credential(answer.get_credential_id()).await?;
        if owner != user_id {
            return Err(PasskeyError::Refused("another account's passkey".into()));
        }
        let result = relying_party
            .finish_passkey_authentication(&answer, &state)
            .map_err(|e| PasskeyError::Refused(e.to_string()))?;
        passkey.update_credential(&result);
        self.used(id, &passkey).await
    }

    /// The passkey with this credential id, of an active account: its row id, owner and key.
    async fn by_credential(&self, credential_id: &[u8]) -> Result<(i64, i64, Passkey), PasskeyError> {
        let row: Option<(i64, i64, String)> =
            on_db!(&self.db, |pool| sqlx::query_as(BY_CREDENTIAL).bind(credential_id).fetch_optional(pool).await?);
        let (id, user_id, stored) = row.ok_or_else(|| PasskeyError::Refused("an unknown passkey".into()))?;
        Ok((id, user_id, serde_json::from_str(&stored)?))
    }

    /// Stores the counter and backup state a sign-in moved, and when it was used.
    async fn used(&self, id: i64, passkey: &Passkey) -> Result<(), PasskeyError> {
        let stored = serde_json::to_string(passkey)?;
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&USED)).bind(id).bind(stored).execute(pool).await.map(drop)?);
        Ok(())
    }

    /// Removes one of the account's passkeys; false when it has no such passkey.
    pub async fn remove(&self, user_id: i64, id: i64) -> Result<bool, sqlx::Error> {
        let removed =
            on_db!(&self.db, |pool| sqlx::query(REMOVE).bind(id).bind(user_id).execute(pool).await?.rows_affected());
        Ok(removed == 1)
    }
}

/// The relying party for `base_url`: its host as the id, its exact origin as the only origin.
fn relying_party(base_url: &Url) -> Option<Webauthn> {
    let domain = base_url.domain()?;
    let origin = Url::parse(&base_url.origin().ascii_serialization()).ok()?;
    WebauthnBuilder::new(domain, &origin).ok()?.rp_name("watasu").build().ok()
}

/// The browser's answer, as the page's script sent it (JSON, binary fields in base64url).
fn parse_answer<T: serde::de::DeserializeOwned>(answer: &str) -> Result<T, PasskeyError> {
    serde_json::from_str(answer).map_err(|_| PasskeyError::Refused("a malformed answer".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_trimmed_line_of_at_most_64_characters() {
        assert_eq!(PasskeyName::parse("  My \n phone ").unwrap().as_str(), "My phone");
        assert_eq!(PasskeyName::parse(&"渡".repeat(64)).unwrap().as_str().chars().count(), 64);
        assert!(PasskeyName::parse(&"渡".repeat(65)).is_none());
        assert!(PasskeyName::parse("   ").is_none());
        assert!(PasskeyName::parse("a\u{7}b").is_none());
    }

    #[test]
    fn only_a_domain_can_be_a_relying_party() {
        for (url, available) in [
            ("https://files.example.com/", true),
            ("https://files.example.com/sub/", true),
            ("http://localhost:8080/", true),
            ("http://127.0.0.1:8080/", false),
            ("http://[::1]:8080/", false),
        ] {
            assert_eq!(relying_party(&Url::parse(url).unwrap()).is_some(), available, "{url}");
        }
    }
}
