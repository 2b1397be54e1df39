//! Personal API tokens' use cases: a sender creates one (after giving the current password again)
//! and sees it once, lists and revokes their own; an admin lists and revokes the team's; the
//! host's command does all three. `authenticate` is the check every bearer request of the API
//! passes: one answer for every refused token, in the same time whatever is wrong with it.

use std::{net::IpAddr, time::Duration};

use super::{Fault, Parts, accounts::Accounts};
use crate::{
    accounts::{
        User,
        tokens::{
            ApiTokens, MintedToken, Scope, Scopes, TokenEntry, TokenName, bearer_token, hash_matches, lookup_id_of,
        },
    },
    ratelimit::{Limit, RateLimiter},
    secret::SecretString,
};

/// How long a token works, chosen when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenExpiry {
    After(Duration),
    Never,
}

const DAY: Duration = Duration::from_secs(24 * 3600);
const YEAR: Duration = DAY.saturating_mul(365);

impl TokenExpiry {
    /// The choices the account page offers, the first being its default.
    pub const CHOICES: [TokenExpiry; 4] =
        [Self::After(DAY.saturating_mul(90)), Self::After(DAY.saturating_mul(30)), Self::After(YEAR), Self::Never];

    /// What the page's select and the CLI's `--expires-in` take: `30d`, `90d`, `1y`, `never`, or
    /// any duration the settings take (`12h`).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "never" | "none" => Ok(Self::Never),
            "1y" => Ok(Self::After(YEAR)),
            other => crate::config::parse_duration(other).map(Self::After),
        }
    }

    /// The form's value for this choice.
    pub fn code(self) -> String {
        match self {
            Self::Never => "never".to_owned(),
            Self::After(d) if d == YEAR => "1y".to_owned(),
            Self::After(d) => format!("{}d", d.as_secs() / DAY.as_secs()),
        }
    }

    fn duration(self) -> Option<Duration> {
        match self {
            Self::After(d) => Some(d),
            Self::Never => None,
        }
    }
}

/// A token to make.
pub struct NewToken {
    pub name: TokenName,
    pub scopes: Scopes,
    pub expiry: TokenExpiry,
}

/// A token just made: the only time it is seen.
pub struct CreatedToken {
    pub id: i64,
    pub token: SecretString,
    pub lookup_id: String,
}

/// A bearer request's caller: the token's owner and what the token may do.
#[derive(Clone, Debug)]
pub struct TokenUser {
    pub user: User,
    pub scopes: Scopes,
    pub token_id: i64,
}

impl TokenUser {
    /// Whether the token may do what needs `scope`.
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }
}

/// Why a bearer request is refused. The API answers all but `TooMany` and `Fault` the same way
/// (401), so a caller learns nothing about a token it does not hold; the variants are for the log.
#[derive(Debug, thiserror::Error)]
pub enum TokenRefusal {
    #[error("no bearer token")]
    Missing,
    #[error("not a token's shape")]
    Malformed,
    #[error("unknown token or wrong secret")]
    Unknown,
    #[error("token expired")]
    Expired,
    #[error("token revoked")]
    Revoked,
    #[error("the token's owner is disabled or being deleted")]
    OwnerBarred,
    #[error("too many requests")]
    TooMany(Duration),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for TokenRefusal {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

/// Why a token was not made.
#[derive(Debug, thiserror::Error)]
pub enum CreateRefusal {
    #[error("wrong current password")]
    WrongPassword,
    #[error("too many attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Fault(#[from] Fault),
}

/// Refused tokens per client: a stranger's guesses slow down only the stranger, never the owner
/// of a right token calling from elsewhere.
const FAILURES_PER_CLIENT: [Limit; 1] = [Limit::new(20, Duration::from_secs(600))];
/// Requests per token: a runaway script is held back without a write on every request beyond it.
const REQUESTS_PER_TOKEN: [Limit; 1] = [Limit::new(600, Duration::from_secs(60))];

#[derive(Clone)]
pub struct Tokens {
    tokens: ApiTokens,
    accounts: Accounts,
    limiter: RateLimiter,
}

impl Tokens {
    pub fn new(parts: &Parts, accounts: Accounts) -> Self {
        Self { tokens: ApiTokens::new(parts.db.clone()), accounts, limiter: RateLimiter::new(parts.db.clone()) }
    }

    /// A sender makes a token after giving the current password again (under the sign-in limits).
    pub async fn create_confirmed(
        &self,
        user: &User,
        password: SecretString,
        client: IpAddr,
        new: NewToken,
    ) -> Result<CreatedToken, CreateRefusal> {
        use super::accounts::AccountError;
        match self.accounts.confirm_password(user, password, client).await {
            Ok(true) => {}
            Ok(false) => return Err(CreateRefusal::WrongPassword),
            Err(AccountError::TooMany(wait)) => return Err(CreateRefusal::TooMany(wait)),
            Err(AccountError::Fault(fault)) => return Err(fault.into()),
            Err(other) => return Err(Fault::Internal(other.into()).into()),
        }
        Ok(self.create(user, new).await?)
    }

    /// Makes a token for `user` (the host's command, which asks for no password).
    pub async fn create(&self, user: &User, new: NewToken) -> Result<CreatedToken, Fault> {
        let minted = MintedToken::mint();
        let id = self.tokens.insert(user.id, &new.name, &minted, &new.scopes, new.expiry.duration()).await?;
        tracing::info!(account_id = user.id, token_id = id, scopes = new.scopes.code(), "API token created");
        Ok(CreatedToken { id, token: minted.token, lookup_id: minted.lookup_id })
    }

    /// An account's tokens, newest first.
    pub async fn list_of(&self, user: &User) -> Result<Vec<TokenEntry>, Fault> {
        Ok(self.tokens.of_user(user.id).await?)
    }

    /// Every token of the team (admins and the host's command).
    pub async fn list_all(&self) -> Result<Vec<TokenEntry>, Fault> {
        Ok(self.tokens.all().await?)
    }

    /// The owner revokes one of their tokens; false when it is not theirs or not live.
    pub async fn revoke_own(&self, user: &User, id: i64) -> Result<bool, Fault> {
        let done = self.tokens.revoke(id, Some(user.id), Some(user.id)).await?;
        if done {
            tracing::info!(account_id = user.id, token_id = id, "API token revoked by its owner");
        }
        Ok(done)
    }

    /// An admin revokes any token of the team; false when it is not live.
    pub async fn revoke_as_admin(&self, admin: &User, id: i64) -> Result<bool, Fault> {
        if !admin.is_admin() {
            return Ok(false);
        }
        let done = self.tokens.revoke(id, Some(admin.id), None).await?;
        if done {
            tracing::info!(account_id = admin.id, token_id = id, "API token revoked by an admin");
        }
        Ok(done)
    }

    /// The host's command revokes a token named by its id or its prefix (`wts_ab12…`, with or
    /// without the ellipsis, or the bare lookup id); the token revoked, if it was live.
    pub async fn revoke_named(&self, id_or_prefix: &str) -> Result<Option<TokenEntry>, Fault> {
        let named = id_or_prefix.trim().trim_end_matches('…').trim_end_matches("...");
        let entry = match named.parse::<i64>() {
            Ok(id) => self.tokens.by_id(id).await?,
            Err(_) => {
                let lookup = named.strip_prefix(crate::accounts::tokens::PREFIX).unwrap_or(named);
                let lookup = lookup.split('_').next().unwrap_or_default();
                self.tokens.by_lookup_id(lookup).await?
            }
        };
        let Some(entry) = entry else { return Ok(None) };
        if !self.tokens.revoke(entry.id, None, None).await? {
            return Ok(None);
        }
        tracing::info!(token_id = entry.id, "API token revoked from the command line");
        Ok(Some(entry))
    }

    /// The caller of a bearer request, from its `Authorization` header. Whatever is wrong, the
    /// token is hashed and compared once, so a wrong or unknown token costs what a right one does.
    /// Refusals count against the client (not the token: a stranger's guesses must not lock the
    /// owner out); a right token's requests count against the token.
    pub async fn authenticate(&self, authorization: Option<&str>, client: IpAddr) -> Result<TokenUser, TokenRefusal> {
        let failures = format!("api-token-failures:{client}");
        // Recorded as a failure before anything is checked, as every limiter here records first:
        // concurrent wrong tokens then see each other, and a burst gets no more full checks than
        // the limit. What turns out not to be a guess takes its record back.
        let failure = match self.limiter.take(&failures, &FAILURES_PER_CLIENT).await? {
            Ok(failure) => failure,
            Err(wait) => return Err(TokenRefusal::TooMany(wait.0)),
        };
        let verdict = self.verify(authorization).await;
        match &verdict {
            Err(refusal @ (TokenRefusal::TooMany(_) | TokenRefusal::Fault(_))) => {
                tracing::warn!(%client, "bearer check failed: {refusal}");
                self.limiter.take_back(failure).await?;
            }
            Err(refusal) => tracing::info!(%client, "bearer token refused: {refusal}"),
            Ok((caller, use_unrecorded)) => {
                self.limiter.take_back(failure).await?;
                let bucket = format!("api-token:{}", caller.token_id);
                if let Err(wait) = self.limiter.hit(&bucket, &REQUESTS_PER_TOKEN).await? {
                    return Err(TokenRefusal::TooMany(wait.0));
                }
                if *use_unrecorded {
                    self.tokens.used(caller.token_id).await?;
                }
            }
        }
        verdict.map(|(caller, _)| caller)
    }

    /// The caller, and whether this use is still to be recorded.
    async fn verify(&self, authorization: Option<&str>) -> Result<(TokenUser, bool), TokenRefusal> {
        let presented = authorization.map(bearer_token).ok_or(TokenRefusal::Missing)?;
        let presented = presented.ok_or(TokenRefusal::Malformed)?;
        let lookup = lookup_id_of(presented);
        let row = match lookup {
            Some(lookup) => self.tokens.check(lookup).await?,
            None => None,
        };
        let shaped = lookup.is_some();
        if !hash_matches(presented, row.as_ref().map(|r| r.token_hash.as_str())) {
            return Err(if shaped { TokenRefusal::Unknown } else { TokenRefusal::Malformed });
        }
        let row = row.expect("a matching hash has its row");
        if row.revoked {
            return Err(TokenRefusal::Revoked);
        }
        if row.expired {
            return Err(TokenRefusal::Expired);
        }
        if row.owner_barred {
            return Err(TokenRefusal::OwnerBarred);
        }
        let caller = TokenUser { user: row.owner, scopes: row.scopes.0, token_id: row.token_id };
        Ok((caller, row.use_unrecorded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_parse_the_page_choices_and_any_duration() {
        for choice in TokenExpiry::CHOICES {
            assert_eq!(TokenExpiry::parse(&choice.code()), Ok(choice));
        }
        assert_eq!(TokenExpiry::parse("never"), Ok(TokenExpiry::Never));
        assert_eq!(TokenExpiry::parse("12h"), Ok(TokenExpiry::After(Duration::from_secs(12 * 3600))));
        assert!(TokenExpiry::parse("soon").is_err());
    }
}
