//! How fast a second factor may be guessed. Only someone who knows the password reaches the code
//! step, so codes are held tighter than passwords: the password's limits apply in a bucket of
//! their own per account and client (`throttle::guarded`); wrong codes also count per account
//! across every client, with the same free failures and doubling wait, so changing address buys
//! nothing; and one pending sign-in takes at most [`TRIES_PER_SIGN_IN`] codes, then ends (the
//! password is asked again). Each try is recorded before the compare, so concurrent codes see
//! each other. App codes and recovery codes count alike.

use std::{net::IpAddr, time::Duration};

use crate::{
    accounts::throttle::{Throttled, guarded, wait_after, whole_seconds},
    ratelimit::{Limit, RateLimiter},
};

/// Codes one pending sign-in takes before it ends.
pub const TRIES_PER_SIGN_IN: i64 = 5;
/// The tries of one pending sign-in are counted over the longest it can live.
const PER_SIGN_IN: [Limit; 1] = [Limit::new(TRIES_PER_SIGN_IN, super::pending::ENROL_TTL)];

/// What a guarded code came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<T> {
    Passed(T),
    /// Wrong; `ended`: that was the pending sign-in's last try.
    Wrong {
        ended: bool,
    },
}

/// The throttle's account key for codes: the address plus a suffix, so its buckets still start
/// with the account's own prefix (the account's deletion finds them) but are not the password's.
pub fn code_key(email: &str) -> String {
    format!("{email}|second-factor")
}

/// Wrong codes of the account from every client.
fn every_client_bucket(email: &str) -> String {
    format!("login:account:{}|every-client|", code_key(email))
}

/// The tries of the pending sign-in of one session.
fn sign_in_bucket(email: &str, session_id: i64) -> String {
    format!("login:account:{}|sign-in:{session_id}|", code_key(email))
}

/// The warnings mailed to the owner (they are counted like attempts).
pub fn warned_bucket(email: &str) -> String {
    format!("login:account:{}|warned|", code_key(email))
}

/// A fresh pending sign-in (a right password again) starts with all its tries.
pub async fn reset_sign_in(limiter: &RateLimiter, email: &str, session_id: i64) -> Result<(), sqlx::Error> {
    limiter.clear(&sign_in_bucket(email, session_id)).await.map(drop)
}

/// Runs `check` (the compare; `Some` when the code is right) for the pending sign-in of
/// `session_id` unless the account, this client, or the pending sign-in must not try now.
pub async fn guarded_code<T>(
    limiter: &RateLimiter,
    email: &str,
    session_id: i64,
    client: IpAddr,
    check: impl Future<Output = Result<Option<T>, sqlx::Error>>,
) -> Result<Verdict<T>, Throttled> {
    let sign_in = sign_in_bucket(email, session_id);
    let try_id = limiter.record(&sign_in).await?;
    if limiter.check(&sign_in, &PER_SIGN_IN).await?.is_err() {
        // Its tries are all taken, some perhaps still being compared: this one is not compared.
        limiter.take_back(try_id).await?;
        return Err(Throttled::TooMany(whole_seconds(Duration::ZERO)));
    }
    let every = every_client_bucket(email);
    let every_id = limiter.record(&every).await?;
    let failures = limiter.failures(&every, every_id).await?;
    let wait = wait_after(failures.count).saturating_sub(failures.since_last);
    if !wait.is_zero() {
        take_back(limiter, [every_id, try_id]).await?;
        tracing::warn!(%client, failures = failures.count, "second factor refused: wait for the account's backoff");
        return Err(Throttled::TooMany(whole_seconds(wait)));
    }
    match guarded(limiter, &code_key(email), client, check).await {
        Err(refused) => {
            take_back(limiter, [every_id, try_id]).await?;
            Err(refused)
        }
        Ok(Some(passed)) => {
            limiter.clear(&every).await?;
            limiter.clear(&sign_in).await?;
            Ok(Verdict::Passed(passed))
        }
        Ok(None) => {
            limiter.restamp(every_id).await?;
            let ended = limiter.wait_for_room(&sign_in, &PER_SIGN_IN).await? > Duration::ZERO;
            Ok(Verdict::Wrong { ended })
        }
    }
}

async fn take_back(limiter: &RateLimiter, ids: [i64; 2]) -> Result<(), sqlx::Error> {
    for id in ids {
        limiter.take_back(id).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_buckets_are_the_accounts_and_never_the_passwords() {
        let password = crate::accounts::throttle::account_client_bucket("a@example.test", "10.0.0.1".parse().unwrap());
        for bucket in [every_client_bucket("a@example.test"), sign_in_bucket("a@example.test", 7)] {
            assert!(bucket.starts_with("login:account:a@example.test|"), "{bucket}");
            assert!(!bucket.starts_with(&password) && !password.starts_with(&bucket), "{bucket}");
        }
        assert!(!sign_in_bucket("a@example.test", 71).starts_with(&sign_in_bucket("a@example.test", 7)));
    }
}
