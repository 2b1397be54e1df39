//! Signing in: the same answer, in about the same time, for an unknown address and a wrong
//! password (a dummy hash is verified when no account matches); attempts limited per account and
//! per client with windows that grow, so guessing slows down while the owner is never locked out
//! for good.

use std::{net::IpAddr, time::Duration};

use super::{EmailAddress, User, Users, password};
use crate::{
    ratelimit::{Limit, RateLimiter},
    secret::SecretString,
};

const PER_ACCOUNT: [Limit; 3] = [
    Limit::new(5, Duration::from_secs(60)),
    Limit::new(10, Duration::from_secs(15 * 60)),
    Limit::new(30, Duration::from_secs(24 * 3600)),
];
const PER_CLIENT: [Limit; 2] =
    [Limit::new(20, Duration::from_secs(15 * 60)), Limit::new(100, Duration::from_secs(24 * 3600))];

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("unknown address or wrong password")]
    Invalid,
    #[error("too many sign-in attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

pub async fn authenticate(
    users: &Users,
    limiter: &RateLimiter,
    email: &str,
    password: SecretString,
    client: IpAddr,
) -> Result<User, LoginError> {
    let address = EmailAddress::parse(email).ok();
    let account_bucket = format!("login:account:{}", address.as_ref().map_or("-", |a| a.as_str()));
    let per_account = limiter.hit(&account_bucket, &PER_ACCOUNT).await?;
    let per_client = limiter.hit(&format!("login:client:{client}"), &PER_CLIENT).await?;
    if let Err(retry) = per_account.and(per_client) {
        tracing::warn!(%client, "sign-in rate limited");
        return Err(LoginError::TooMany(retry.0));
    }
    let found = match &address {
        Some(address) => users.credentials(address).await?,
        None => None,
    };
    let (user, hash) = match found {
        Some((user, hash)) if !user.disabled => (Some(user), hash),
        _ => (None, password::dummy_hash().to_owned()),
    };
    let verified = password::verify_password(password, hash).await;
    match user {
        Some(user) if verified => {
            tracing::info!(account_id = user.id, %client, "signed in");
            Ok(user)
        }
        Some(user) => {
            tracing::info!(account_id = user.id, %client, "failed sign-in: wrong password");
            Err(LoginError::Invalid)
        }
        None => {
            tracing::info!(%client, "failed sign-in: no such active account");
            Err(LoginError::Invalid)
        }
    }
}
