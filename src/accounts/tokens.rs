//! Personal API tokens: their format, their scopes, and the `api_tokens` table. A token reads
//! `wts_<lookup id>_<secret>`: the prefix lets secret scanners find a leaked one, the lookup id
//! finds its row, and only the SHA-256 of the whole token is stored. The rules (who may create and
//! revoke, what a bearer request is refused for) are in `services::tokens`.

use rand::Rng;
use subtle::ConstantTimeEq;

use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    on_db,
    secret::{SecretString, sha256_hex},
    sql,
};

/// What every token starts with.
pub const PREFIX: &str = "wts_";
/// Characters of the lookup id (base62, about 71 bits: unique by chance, checked by the index).
const LOOKUP_LEN: usize = 12;
/// Characters of the secret: 43 base62 characters carry 256 bits.
const SECRET_LEN: usize = 43;
/// The longest label, in characters.
const NAME_MAX: usize = 64;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

crate::db_code! {
    /// What a token may do. A bearer request to an API route needs the route's scope.
    pub enum Scope {
        SharesRead = "shares:read",
        SharesWrite = "shares:write",
        RequestsRead = "requests:read",
        RequestsWrite = "requests:write",
        WebhooksRead = "webhooks:read",
        WebhooksWrite = "webhooks:write",
    }
}

/// A token's scopes: at least one, each once, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

/// A scope list that cannot be a token's.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScopesError {
    #[error(
        "unknown scope {0:?} (known: shares:read, shares:write, requests:read, requests:write, webhooks:read, webhooks:write)"
    )]
    Unknown(String),
    #[error("a token needs at least one scope")]
    None,
}

impl Scopes {
    /// Parses codes as typed (a form's boxes, the CLI's `--scope`); an unknown one is refused.
    pub fn parse<'a>(codes: impl IntoIterator<Item = &'a str>) -> Result<Self, ScopesError> {
        let mut chosen = Vec::new();
        for code in codes.into_iter().flat_map(|c| c.split([' ', ','])).filter(|c| !c.is_empty()) {
            chosen.push(Scope::parse(code).map_err(|_| ScopesError::Unknown(code.to_owned()))?);
        }
        let scopes: Vec<Scope> = Scope::ALL.into_iter().filter(|s| chosen.contains(s)).collect();
        if scopes.is_empty() { Err(ScopesError::None) } else { Ok(Self(scopes)) }
    }

    pub fn contains(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }

    /// The stored form: codes separated by spaces.
    pub fn code(&self) -> String {
        self.0.iter().map(|s| s.code()).collect::<Vec<_>>().join(" ")
    }
}

/// A token's label as its owner typed it: one line, 1 to 64 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenName(String);

impl TokenName {
    pub fn parse(text: &str) -> Option<Self> {
        let name = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let fits = (1..=NAME_MAX).contains(&name.chars().count());
        (fits && !name.chars().any(char::is_control)).then_some(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A new token: what its owner sees once, and what the table keeps.
pub struct MintedToken {
    pub token: SecretString,
    pub lookup_id: String,
}

fn base62(len: usize) -> String {
    let mut rng = rand::rng();
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut bytes = [0u8; 64];
        rng.fill_bytes(&mut bytes);
        // 62 does not divide 256: bytes from 248 up are dropped, so every character is as likely.
        let fair = bytes.iter().filter(|b| **b < 248).take(len - out.len());
        out.extend(fair.map(|b| BASE62[usize::from(b % 62)] as char));
    }
    out
}

impl MintedToken {
    /// A fresh token from the operating system's CSPRNG.
    pub fn mint() -> Self {
        let lookup_id = base62(LOOKUP_LEN);
        let token = SecretString::new(format!("{PREFIX}{lookup_id}_{}", base62(SECRET_LEN)));
        Self { token, lookup_id }
    }
}

/// The lookup id of a presented token, if it has a token's shape at all.
pub fn lookup_id_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(PREFIX)?;
    let (lookup, secret) = rest.split_once('_')?;
    let shaped = |part: &str, len| part.len() == len && part.bytes().all(|b| b.is_ascii_alphanumeric());
    (shaped(lookup, LOOKUP_LEN) && shaped(secret, SECRET_LEN)).then_some(lookup)
}

/// The token of an `Authorization` header's `Bearer <token>`. The scheme is case-insensitive and
/// may be followed by more than one space (RFC 7235 section 2.1, RFC 6750 section 2.1); clients
/// such as curl and some proxies send it in other cases than "Bearer".
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim_start_matches(' '))
}

/// How a token is shown after its creation: its prefix and lookup id (`wts_ab12cd34ef56…`).
pub fn shown_prefix(lookup_id: &str) -> String {
    format!("{PREFIX}{lookup_id}…")
}

/// Compares a presented token with a stored hash in constant time. Without a row the presented
/// token is compared with a hash nothing hashes to, so an unknown id costs what a wrong secret does.
pub fn hash_matches(presented: &str, stored: Option<&str>) -> bool {
    const NOTHING: &str = "0000000000000000000000000000000000000000000000000000000000000000";
    let presented = sha256_hex(presented);
    let found = stored.is_some();
    let stored = stored.unwrap_or(NOTHING);
    bool::from(presented.as_bytes().ct_eq(stored.as_bytes())) && found
}

/// A token as the lists show it (never the secret or its hash).
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct TokenEntry {
    pub id: i64,
    pub user_id: i64,
    /// The owner's address (the team's list and the CLI name them).
    pub email: String,
    pub name: String,
    pub lookup_id: String,
    #[sqlx(try_from = "String")]
    #[serde(serialize_with = "serialize_scopes")]
    pub scopes: StoredScopes,
    #[serde(serialize_with = "serialize_time")]
    pub created_at: Timestamp,
    #[serde(serialize_with = "serialize_optional_time")]
    pub expires_at: Option<Timestamp>,
    #[serde(serialize_with = "serialize_optional_time")]
    pub last_used_at: Option<Timestamp>,
    #[serde(serialize_with = "serialize_optional_time")]
    pub revoked_at: Option<Timestamp>,
}

/// Scopes read back from a row (a stored code outside the set is a decoding error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredScopes(pub Scopes);

impl TryFrom<String> for StoredScopes {
    type Error = crate::db::UnknownCode;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        let scopes = text.split(' ').map(Scope::parse).collect::<Result<Vec<_>, _>>()?;
        Ok(Self(Scopes(scopes)))
    }
}

fn serialize_scopes<S: serde::Serializer>(scopes: &StoredScopes, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(scopes.0.iter().map(Scope::code))
}

fn serialize_time<S: serde::Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&at.0.to_rfc3339())
}

fn serialize_optional_time<S: serde::Serializer>(at: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serialize_time(at, s),
        None => s.serialize_none(),
    }
}

/// What a bearer check reads of a token by its lookup id, its owner included: one read per
/// request.
#[derive(Debug, sqlx::FromRow)]
pub struct TokenCheck {
    pub token_id: i64,
    pub token_hash: String,
    #[sqlx(try_from = "String")]
    pub scopes: StoredScopes,
    pub expired: bool,
    pub revoked: bool,
    /// The owner is disabled or their deletion case is open.
    pub owner_barred: bool,
    /// No use recorded within the minute: this one is written (see [`ApiTokens::used`]).
    pub use_unrecorded: bool,
    #[sqlx(flatten)]
    pub owner: crate::accounts::User,
}

/// Every column a list shows, with the owner's address.
macro_rules! entry_columns {
    () => {
        "SELECT t.id, t.user_id, u.email, t.name, t.lookup_id, t.scopes, t.created_at, t.expires_at,
                t.last_used_at, t.revoked_at FROM api_tokens t JOIN users u ON u.id = t.user_id "
    };
}

const INSERT: Sql = sql!(
    "INSERT INTO api_tokens (user_id, name, lookup_id, token_hash, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, CASE WHEN CAST($6 AS " { sqlite: "REAL", postgres: "float8" } ") IS NULL THEN NULL
            ELSE " now " + " secs("$6") " END) RETURNING id"
);
const OF_USER: &str = concat!(entry_columns!(), "WHERE t.user_id = $1 ORDER BY t.created_at DESC, t.id DESC");
const ALL: &str = concat!(entry_columns!(), "ORDER BY u.email, t.created_at DESC, t.id DESC");
const BY_ID: &str = concat!(entry_columns!(), "WHERE t.id = $1");
const BY_LOOKUP: &str = concat!(entry_columns!(), "WHERE t.lookup_id = $1");
const CHECK: Sql = sql!(
    "SELECT t.id AS token_id, t.token_hash, t.scopes,
            COALESCE(t.expires_at <= " now ", FALSE) AS expired, t.revoked_at IS NOT NULL AS revoked,
            (u.disabled_at IS NOT NULL OR EXISTS (SELECT 1 FROM deletion_cases d
               WHERE d.subject_id = u.id AND d.state NOT IN ('completed', 'failed'))) AS owner_barred,
            (t.last_used_at IS NULL OR t.last_used_at < " now " - " secs("$2") ") AS use_unrecorded,
            u.id, u.email, u.display_name, u.role, u.lang, u.disabled_at IS NOT NULL AS disabled
       FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.lookup_id = $1"
);
/// At most one write a minute per token (the list says "last used" to the minute, and a busy
/// script would otherwise write on every request). `CHECK` reads the same condition, so a
/// request within the minute sends no write statement at all; this one holds it for two
/// requests racing.
const USED: Sql = sql!(
    "UPDATE api_tokens SET last_used_at = " now " WHERE id = $1
        AND (last_used_at IS NULL OR last_used_at < " now " - " secs("$2") ")"
);
/// How often a token's use is written at most.
const RECORD_USE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// Revokes one live token; `$2` names who (NULL: the host's command), `$3` limits it to an owner.
const REVOKE: Sql = sql!(
    "UPDATE api_tokens SET revoked_at = " now ", revoked_by = $2
      WHERE id = $1 AND revoked_at IS NULL AND (CAST($3 AS " { sqlite: "INTEGER", postgres: "BIGINT" } ") IS NULL OR user_id = $3)"
);
/// Every live token of an account, in the transaction that disables it or opens its deletion case.
pub const REVOKE_ALL_OF_USER: Sql =
    sql!("UPDATE api_tokens SET revoked_at = " now ", revoked_by = $2 WHERE user_id = $1 AND revoked_at IS NULL");

/// The api_tokens table.
#[derive(Clone, Debug)]
pub struct ApiTokens {
    db: Db,
}

impl ApiTokens {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Stores a new token's hash; answers its id.
    pub async fn insert(
        &self,
        user_id: i64,
        name: &TokenName,
        minted: &MintedToken,
        scopes: &Scopes,
        expires_in: Option<std::time::Duration>,
    ) -> Result<i64, sqlx::Error> {
        let hash = sha256_hex(minted.token.expose());
        let expires_in = expires_in.map(seconds);
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&INSERT))
            .bind(user_id)
            .bind(name.as_str())
            .bind(&minted.lookup_id)
            .bind(&hash)
            .bind(scopes.code())
            .bind(expires_in)
            .fetch_all(pool)
            .await
            .and_then(crate::db::one_written_row))
    }

    /// An account's tokens, newest first, revoked ones too.
    pub async fn of_user(&self, user_id: i64) -> Result<Vec<TokenEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(OF_USER).bind(user_id).fetch_all(pool).await)
    }

    /// Every token of the team, by owner.
    pub async fn all(&self) -> Result<Vec<TokenEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(ALL).fetch_all(pool).await)
    }

    pub async fn by_id(&self, id: i64) -> Result<Option<TokenEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(BY_ID).bind(id).fetch_optional(pool).await)
    }

    pub async fn by_lookup_id(&self, lookup_id: &str) -> Result<Option<TokenEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(BY_LOOKUP).bind(lookup_id).fetch_optional(pool).await)
    }

    /// What a bearer check needs of the token with this lookup id.
    pub async fn check(&self, lookup_id: &str) -> Result<Option<TokenCheck>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&CHECK))
            .bind(lookup_id)
            .bind(seconds(RECORD_USE_EVERY))
            .fetch_optional(pool)
            .await)
    }

    /// Records a use (unless one was recorded within the minute).
    pub async fn used(&self, id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&USED))
            .bind(id)
            .bind(seconds(RECORD_USE_EVERY))
            .execute(pool)
            .await
            .map(drop))
    }

    /// Revokes a live token, by `by` (None: the host's command), only if `owner` owns it when
    /// given; true when it was live.
    pub async fn revoke(&self, id: i64, by: Option<i64>, owner: Option<i64>) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&REVOKE))
            .bind(id)
            .bind(by)
            .bind(owner)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_has_the_prefix_its_lookup_id_and_256_bits_of_secret() {
        let minted = MintedToken::mint();
        let token = minted.token.expose();
        assert!(token.starts_with("wts_"));
        assert_eq!(lookup_id_of(token), Some(minted.lookup_id.as_str()));
        assert_eq!(token.len(), PREFIX.len() + LOOKUP_LEN + 1 + SECRET_LEN);
        assert!(SECRET_LEN as f64 * 62f64.log2() >= 256.0);
        assert_ne!(MintedToken::mint().token, minted.token);
    }

    #[test]
    fn a_malformed_token_has_no_lookup_id() {
        let good = MintedToken::mint();
        let token = good.token.expose();
        for bad in ["", "wts_", "wts_abc_def", &token[1..], &format!("{token}x"), &token.replace("wts_", "wtx_")] {
            assert_eq!(lookup_id_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_the_right_token_matches_its_hash_and_nothing_matches_no_row() {
        let minted = MintedToken::mint();
        let stored = sha256_hex(minted.token.expose());
        assert!(hash_matches(minted.token.expose(), Some(&stored)));
        assert!(!hash_matches(MintedToken::mint().token.expose(), Some(&stored)));
        assert!(!hash_matches(minted.token.expose(), None));
    }

    #[test]
    fn scopes_parse_known_codes_once_in_order_and_refuse_unknown_ones() {
        let scopes = Scopes::parse(["shares:write", "shares:read", "shares:write"]).unwrap();
        assert_eq!(scopes.code(), "shares:read shares:write");
        assert_eq!(Scopes::parse(["shares:admin"]), Err(ScopesError::Unknown("shares:admin".into())));
        assert_eq!(Scopes::parse([]), Err(ScopesError::None));
        assert_eq!(StoredScopes::try_from(scopes.code()).unwrap().0, scopes);
    }
}
