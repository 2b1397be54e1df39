//! The instance secret at start-up: read from `DATA_DIR/secret.key`, or made there only while
//! nothing in the database depends on a key. A new key over such data would leave authenticator
//! apps, passkeys, waiting mails, pending codes, secret notes and webhook secrets unreadable,
//! without a word. [`held_by`] says for every use of a key what it leaves behind.

use std::path::{Path, PathBuf};

use crate::{
    config::Config,
    db::{Db, Dialect, Sql},
    on_db,
    secret::{Purpose, SecretKey},
    sql,
};

mod file_key;

pub use file_key::{
    FILE_KEY_FILE, FileKeyMissing, FileKeyNotCopied, FileKeyNotTheDeployments, FileKeyWrong, load_file_keys,
};

/// The key's file in the data folder (unless WATASU_SECRET_KEY is set).
pub const KEY_FILE: &str = "secret.key";

/// What in the database only the instance secret (or a key derived from it) opens or matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct KeyedData {
    /// Authenticator apps: their secrets are sealed with a key derived from it.
    pub apps: i64,
    /// Passkeys: their user handles are derived from it.
    pub passkeys: i64,
    /// Mails waiting in the outbox: their bodies are sealed with it.
    pub waiting_mails: i64,
    /// One-time codes still usable: checked against a MAC under it.
    pub pending_codes: i64,
    /// Secret notes not ended yet: their keys are wrapped under it.
    pub notes: i64,
    /// Webhook endpoints: their signing secrets are sealed with it.
    pub webhook_secrets: i64,
}

/// One kind of data [`KeyedData`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Apps,
    Passkeys,
    WaitingMails,
    PendingCodes,
    Notes,
    WebhookSecrets,
}

impl Kind {
    pub const ALL: [Kind; 6] =
        [Kind::Apps, Kind::Passkeys, Kind::WaitingMails, Kind::PendingCodes, Kind::Notes, Kind::WebhookSecrets];

    /// The kind in the singular, for the one line a refused start prints.
    pub const fn word(self) -> &'static str {
        match self {
            Kind::Apps => "authenticator app",
            Kind::Passkeys => "passkey",
            Kind::WaitingMails => "waiting mail",
            Kind::PendingCodes => "pending code",
            Kind::Notes => "secret note",
            Kind::WebhookSecrets => "webhook endpoint secret",
        }
    }
}

/// What a key derived for one [`Purpose`] leaves unreadable when the key that made it is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Rows of the database, counted as this kind of [`KeyedData`].
    Counted(Kind),
    /// Derived from the file key, not the instance secret: [`load_file_keys`] checks those.
    FileKey,
    /// Nothing the database keeps: a cookie or form of minutes, which a new key only restarts.
    Passing,
}

/// What each use of a key leaves behind. Exhaustive on purpose: a new [`Purpose`] does not build
/// until it says what the start-up check counts for it.
pub const fn held_by(purpose: Purpose) -> Held {
    match purpose {
        Purpose::OtpPepper | Purpose::OtpCodeSeal => Held::Counted(Kind::PendingCodes),
        Purpose::MailOutbox => Held::Counted(Kind::WaitingMails),
        Purpose::TotpSecret => Held::Counted(Kind::Apps),
        Purpose::PasskeyHandle => Held::Counted(Kind::Passkeys),
        Purpose::WebhookSecret => Held::Counted(Kind::WebhookSecrets),
        Purpose::NoteBeforeOwnKeys | Purpose::NoteKeyWrap => Held::Counted(Kind::Notes),
        // A sign-in under way lives in a cookie for minutes; it is started again.
        Purpose::SsoPending => Held::Passing,
        // A form of a browser without a session, and the sender's just-made links cookie.
        Purpose::AnonymousForm | Purpose::CreatedLinkCookie => Held::Passing,
        Purpose::FileKeyWrap | Purpose::FileKeyId => Held::FileKey,
    }
}

const COUNT: Sql = sql!(
    "SELECT (SELECT count(*) FROM totp_factors) AS apps,
            (SELECT count(*) FROM passkeys) AS passkeys,
            (SELECT count(*) FROM mail_outbox WHERE status IN ('pending', 'sending')) AS waiting_mails,
            (SELECT count(*) FROM otp_challenges
              WHERE consumed_at IS NULL AND invalidated_at IS NULL AND expires_at > " now ") AS pending_codes,
            (SELECT count(*) FROM handovers WHERE note_sealed IS NOT NULL) AS notes,
            (SELECT count(*) FROM webhook_endpoints) AS webhook_secrets"
);

impl KeyedData {
    pub async fn count(db: &Db) -> Result<Self, sqlx::Error> {
        on_db!(db, |pool| sqlx::query_as(pool.sql(&COUNT)).fetch_one(pool).await)
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// How many of `kind` there are.
    pub const fn of(&self, kind: Kind) -> i64 {
        match kind {
            Kind::Apps => self.apps,
            Kind::Passkeys => self.passkeys,
            Kind::WaitingMails => self.waiting_mails,
            Kind::PendingCodes => self.pending_codes,
            Kind::Notes => self.notes,
            Kind::WebhookSecrets => self.webhook_secrets,
        }
    }

    /// The non-zero counts, as "2 authenticator apps, 1 waiting mail".
    pub fn describe(&self) -> String {
        let named: Vec<String> = Kind::ALL
            .iter()
            .map(|kind| (self.of(*kind), kind.word()))
            .filter(|(count, _)| *count > 0)
            .map(|(count, what)| format!("{count} {what}{}", if count == 1 { "" } else { "s" }))
            .collect();
        named.join(", ")
    }
}

/// Start-up refused: the key file is gone and the database holds data sealed with it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is missing, but the database holds data only that key opens ({}): restore it from your backup \
     (or set WATASU_SECRET_KEY to its value), or run `watasu secret-key new` to start over with a new key knowingly",
    path.display(), held.describe()
)]
pub struct KeyMissing {
    pub path: PathBuf,
    pub held: KeyedData,
}

/// The instance secret: WATASU_SECRET_KEY, the data folder's key file, or a new key in that file
/// when there is none and nothing in `db` needs the old one.
pub async fn load_secret_key(config: &Config, db: &Db) -> anyhow::Result<SecretKey> {
    if let Some(hex) = &config.settings.secret_key {
        return SecretKey::from_hex(hex.expose()).map_err(|e| anyhow::anyhow!("WATASU_SECRET_KEY {e}"));
    }
    let path = key_path(&config.settings.data_dir);
    if let Some(key) = SecretKey::load(&path)? {
        return Ok(key);
    }
    let held = KeyedData::count(db).await?;
    if !held.is_empty() {
        return Err(KeyMissing { path, held }.into());
    }
    SecretKey::generate(&path)
}

pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_only_what_is_there_in_singular_or_plural() {
        let held = KeyedData { apps: 2, waiting_mails: 1, notes: 1, webhook_secrets: 3, ..KeyedData::default() };
        assert_eq!(held.describe(), "2 authenticator apps, 1 waiting mail, 1 secret note, 3 webhook endpoint secrets");
        assert!(KeyedData::default().is_empty());
    }

    #[test]
    fn every_use_of_a_key_is_listed_with_what_it_leaves_behind_and_every_kind_has_one() {
        use Held::*;
        let listed = [
            (Purpose::OtpPepper, Counted(Kind::PendingCodes)),
            (Purpose::OtpCodeSeal, Counted(Kind::PendingCodes)),
            (Purpose::MailOutbox, Counted(Kind::WaitingMails)),
            (Purpose::TotpSecret, Counted(Kind::Apps)),
            (Purpose::PasskeyHandle, Counted(Kind::Passkeys)),
            (Purpose::WebhookSecret, Counted(Kind::WebhookSecrets)),
            (Purpose::NoteBeforeOwnKeys, Counted(Kind::Notes)),
            (Purpose::NoteKeyWrap, Counted(Kind::Notes)),
            (Purpose::SsoPending, Passing),
            (Purpose::AnonymousForm, Passing),
            (Purpose::CreatedLinkCookie, Passing),
            (Purpose::FileKeyWrap, FileKey),
            (Purpose::FileKeyId, FileKey),
        ];
        let actual: Vec<(Purpose, Held)> = Purpose::ALL.iter().map(|p| (*p, held_by(*p))).collect();
        assert_eq!(actual, listed, "a use of a key is new or changed: list it here with what it leaves behind");
        for kind in Kind::ALL {
            assert!(actual.iter().any(|(_, held)| *held == Counted(kind)), "{kind:?} is counted but nothing makes it");
        }
    }
}
