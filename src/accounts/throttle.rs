//! How fast a sender's password may be guessed, wherever it is typed: signing in, and the account
//! forms that ask for the current password again. Only failures count, per account *and* client,
//! so a stranger hammering an account slows down only themselves and its owner still gets in from
//! their own device: a few failures are free, then each one doubles the wait before the next try
//! (capped). A success clears that account and client's failures. A refused (429) attempt counts
//! nothing and waits for nothing: it cannot keep a wait open. Failures are also limited per client
//! across all accounts (password spraying), high enough for an office behind one address.
//!
//! An attempt is recorded before the password is checked and taken back if it turns out not to
//! count, so concurrent guesses see each other and cannot all slip through one open moment.

use std::{net::IpAddr, time::Duration};

use crate::ratelimit::{Limit, RateLimiter};

/// Failures of one account from one client that cost no wait.
pub const FREE_FAILURES: i64 = 5;
/// The wait after the first failure past the free ones; it doubles with each further failure…
pub const FIRST_WAIT: Duration = Duration::from_secs(1);
/// …up to this.
pub const LONGEST_WAIT: Duration = Duration::from_secs(15 * 60);

/// Failures from one client across every account: far above what a shared office address makes
/// by mistyping, far below what spraying guesses over many accounts needs.
const PER_CLIENT: [Limit; 2] =
    [Limit::new(100, Duration::from_secs(15 * 60)), Limit::new(1000, Duration::from_secs(24 * 3600))];

/// Refused before the password was looked at: try again after this long.
#[derive(Debug, thiserror::Error)]
pub enum Throttled {
    #[error("too many failed password attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// How long the next attempt waits after `failures` failures, counted from the last of them.
pub fn wait_after(failures: i64) -> Duration {
    if failures < FREE_FAILURES {
        return Duration::ZERO;
    }
    crate::retry::backoff(FIRST_WAIT, u32::try_from(failures - FREE_FAILURES).unwrap_or(u32::MAX), LONGEST_WAIT)
}

/// The bucket of one account (its normalised address, or `-` for text that is no address) and one
/// client. It starts with `login:account:{address}|`, which is how the account's deletion finds
/// it, and ends with `|` so that no other client's bucket starts with it.
pub fn account_client_bucket(account: &str, client: IpAddr) -> String {
    format!("login:account:{account}|client:{client}|")
}

/// Runs `check` (the password comparison; `Some` when it is right) unless this account and client,
/// or this client, must wait first. The answer and the limits do not depend on whether the account
/// exists: the caller keys `account` by what was typed.
pub async fn guarded<T>(
    limiter: &RateLimiter,
    account: &str,
    client: IpAddr,
    check: impl Future<Output = Result<Option<T>, sqlx::Error>>,
) -> Result<Option<T>, Throttled> {
    let pair = account_client_bucket(account, client);
    let pair_id = limiter.record(&pair).await?;
    let failures = limiter.failures(&pair, pair_id).await?;
    let wait = wait_after(failures.count).saturating_sub(failures.since_last);
    if !wait.is_zero() {
        limiter.take_back(pair_id).await?;
        tracing::warn!(%client, failures = failures.count, "password attempt refused: wait for the backoff");
        return Err(Throttled::TooMany(whole_seconds(wait)));
    }
    let per_client = format!("login:client:{client}");
    let client_id = limiter.record(&per_client).await?;
    if let Err(retry) = limiter.check(&per_client, &PER_CLIENT).await? {
        limiter.take_back(client_id).await?;
        limiter.take_back(pair_id).await?;
        tracing::warn!(%client, "password attempt refused: too many failures from this client");
        return Err(Throttled::TooMany(whole_seconds(retry.0)));
    }
    let outcome = check.await;
    match &outcome {
        Ok(Some(_)) => {
            limiter.clear(&pair).await?;
            limiter.take_back(client_id).await?;
        }
        // A failed look-up is no guess, but stays counted: it must not become a way around the wait.
        Ok(None) | Err(_) => limiter.restamp(pair_id).await?,
    }
    Ok(outcome?)
}

/// A wait rounded up to whole seconds (Retry-After has no fractions, and rounding down would send
/// the client back a moment too early).
pub fn whole_seconds(wait: Duration) -> Duration {
    Duration::from_secs(wait.as_secs_f64().ceil().max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_free_then_doubles_up_to_the_cap() {
        let waits: Vec<u64> = (0..=9).map(|n| wait_after(n).as_secs()).collect();
        assert_eq!(waits, [0, 0, 0, 0, 0, 1, 2, 4, 8, 16]);
        assert_eq!(wait_after(15), LONGEST_WAIT);
        assert_eq!(wait_after(i64::MAX), LONGEST_WAIT);
    }

    #[test]
    fn no_other_clients_bucket_starts_with_a_bucket_name() {
        let one = account_client_bucket("a@example.test", "10.0.0.1".parse().unwrap());
        let other = account_client_bucket("a@example.test", "10.0.0.12".parse().unwrap());
        assert!(!other.starts_with(&one));
        assert!(one.starts_with("login:account:a@example.test|"));
    }
}
