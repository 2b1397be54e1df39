//! Signing in: the same answer, in about the same time, for an unknown address and a wrong
//! password (a dummy hash is verified when no account matches), under the same limits (`throttle`,
//! keyed by the address as typed), so guessing slows down while the owner is never locked out by
//! someone else.

use std::{net::IpAddr, time::Duration};

use super::{
    EmailAddress, User, Users, password,
    throttle::{Throttled, guarded},
};
use crate::{ratelimit::RateLimiter, secret::SecretString};

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("unknown address or wrong password")]
    Invalid,
    #[error("too many sign-in attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

impl From<Throttled> for LoginError {
    fn from(error: Throttled) -> Self {
        match error {
            Throttled::TooMany(wait) => Self::TooMany(wait),
            Throttled::Database(error) => Self::Database(error),
        }
    }
}

pub async fn authenticate(
    users: &Users,
    limiter: &RateLimiter,
    email: &str,
    password: SecretString,
    client: IpAddr,
) -> Result<User, LoginError> {
    let address = EmailAddress::parse(email).ok();
    let account = address.as_ref().map_or("-", |a| a.as_str());
    let check = async {
        let found = match &address {
            Some(address) => users.credentials(address).await?,
            None => None,
        };
        let (user, hash) = match found {
            Some((user, hash)) if !user.disabled => (Some(user), hash),
            _ => (None, password::dummy_hash().to_owned()),
        };
        let verified = password::verify_password(password, hash).await;
        Ok(match user {
            Some(user) if verified => Some(user),
            Some(user) => {
                tracing::info!(account_id = user.id, %client, "failed sign-in: wrong password");
                None
            }
            None => {
                tracing::info!(%client, "failed sign-in: no such active account");
                None
            }
        })
    };
    match guarded(limiter, account, client, check).await? {
        Some(user) => {
            tracing::info!(account_id = user.id, %client, "password accepted");
            Ok(user)
        }
        None => Err(LoginError::Invalid),
    }
}

/// The current password asked again by an account form (a password change, a deletion), under
/// the same limits as signing in: a stolen session must not become a faster way to guess it.
/// `Ok(false)`: wrong.
pub async fn confirm_current_password(
    users: &Users,
    limiter: &RateLimiter,
    user: &User,
    password: SecretString,
    client: IpAddr,
) -> Result<bool, Throttled> {
    let check = async {
        let Some(hash) = users.password_hash(user.id).await? else { return Ok(None) };
        Ok(password::verify_password(password, hash).await.then_some(()))
    };
    // The stored address is already normalised: the same key signing in uses.
    Ok(guarded(limiter, &user.email, client, check).await?.is_some())
}
