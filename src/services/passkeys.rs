//! Passkeys' use cases: registering one (after the current password, so a stolen session cannot
//! plant a lasting way in), signing in with one alone, using one as the step after a password,
//! and removing one. Passkeys are a way in beside passwords: on a team that signs in by single
//! sign-on only, they are off like passwords. A passkey verifies its person, so a sign-in with one
//! meets a team's "second factor required" by itself.

use std::{net::IpAddr, time::Duration};

use webauthn_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse};

use super::{
    Fault, Parts,
    accounts::Accounts,
    second_factor::{FactorError, Factors},
};
use crate::{
    accounts::{
        User, Users,
        login::confirm_current_password,
        passkeys::{PasskeyEntry, PasskeyError, PasskeyName, Passkeys},
        second_factor::{Purpose, SecondFactors},
        throttle::Throttled,
    },
    ratelimit::{Limit, RateLimiter, RetryAfter},
    secret::SecretString,
    session::{NewSession, Session, Sessions},
};

#[derive(Debug, thiserror::Error)]
pub enum PasskeyRefusal {
    /// This address cannot have passkeys (no domain), or the team signs in by single sign-on only.
    #[error("passkeys are off")]
    Off,
    #[error("wrong current password")]
    WrongPassword,
    #[error("the name is empty or too long")]
    BadName,
    /// No ceremony waits (it expired, was used, or never began): start again.
    #[error("no passkey ceremony waiting")]
    Expired,
    /// The browser's answer did not verify; nothing changed.
    #[error("the passkey was not accepted")]
    NotAccepted,
    #[error("this passkey is registered already")]
    Taken,
    /// A second-factor step without a live pending sign-in.
    #[error("no pending sign-in")]
    NoPendingSignIn,
    #[error("too many attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for PasskeyRefusal {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<PasskeyError> for PasskeyRefusal {
    fn from(error: PasskeyError) -> Self {
        match error {
            PasskeyError::Unavailable => Self::Off,
            PasskeyError::NoCeremony => Self::Expired,
            PasskeyError::Refused(_) => Self::NotAccepted,
            PasskeyError::Taken => Self::Taken,
            PasskeyError::Database(error) => error.into(),
            PasskeyError::Stored(error) => Self::Fault(Fault::Internal(error.into())),
        }
    }
}

impl From<FactorError> for PasskeyRefusal {
    fn from(error: FactorError) -> Self {
        match error {
            FactorError::TooMany(wait) => Self::TooMany(wait),
            FactorError::Fault(fault) => Self::Fault(fault),
            _ => Self::NoPendingSignIn,
        }
    }
}

/// Why passkeys are off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// The base URL is an IP address (WebAuthn needs a domain).
    NoDomain,
    /// The team signs in by single sign-on only.
    SingleSignOnOnly,
}

/// Passkey sign-ins a client may start without a session (each makes a session and a ceremony
/// row): far more than a household or an office behind one address starts, far fewer than a flood.
pub const ANONYMOUS_STARTS: [Limit; 1] = [Limit::new(30, Duration::from_secs(10 * 60))];

#[derive(Clone)]
pub struct PasskeySignIn {
    passkeys: Passkeys,
    factors: Factors,
    second_factors: SecondFactors,
    accounts: Accounts,
    users: Users,
    sessions: Sessions,
    limiter: RateLimiter,
}

impl PasskeySignIn {
    pub fn new(parts: &Parts, sessions: Sessions, accounts: Accounts, factors: Factors) -> Self {
        Self {
            passkeys: Passkeys::new(parts.db.clone(), &parts.config.base_url, &parts.secret_key),
            second_factors: SecondFactors::new(parts.db.clone(), &parts.secret_key),
            users: Users::new(parts.db.clone()),
            limiter: RateLimiter::new(parts.db.clone()),
            factors,
            accounts,
            sessions,
        }
    }

    /// Whether passkeys can be used here now: the address has a domain and passwords are on.
    pub async fn available(&self) -> Result<bool, Fault> {
        Ok(self.unavailable_because().await?.is_none())
    }

    /// Why passkeys cannot be used here now, if they cannot.
    pub async fn unavailable_because(&self) -> Result<Option<Unavailable>, Fault> {
        Ok(self.unavailable_with(self.accounts.passwords_allowed().await?))
    }

    /// Why passkeys cannot be used here while passwords are on or off as given, if they cannot.
    pub fn unavailable_with(&self, passwords_allowed: bool) -> Option<Unavailable> {
        if !self.passkeys.available() {
            Some(Unavailable::NoDomain)
        } else if !passwords_allowed {
            Some(Unavailable::SingleSignOnOnly)
        } else {
            None
        }
    }

    async fn require_available(&self) -> Result<(), PasskeyRefusal> {
        if self.available().await? { Ok(()) } else { Err(PasskeyRefusal::Off) }
    }

    /// The account's passkeys, for its page.
    pub async fn list(&self, user: &User) -> Result<Vec<PasskeyEntry>, Fault> {
        Ok(self.passkeys.list(user.id).await?)
    }

    /// Starts registering a passkey named `name` on the signed-in `session`, after the current
    /// password: the options for the browser.
    pub async fn begin_registration(
        &self,
        user: &User,
        session: &Session,
        name: &str,
        password: SecretString,
        client: IpAddr,
    ) -> Result<CreationChallengeResponse, PasskeyRefusal> {
        self.require_available().await?;
        PasskeyName::parse(name).ok_or(PasskeyRefusal::BadName)?;
        self.confirm_password(user, password, client).await?;
        Ok(self.passkeys.start_registration(session.id, user.id, &user.email, &user.display_name).await?)
    }

    /// Finishes the registration with the browser's answer. The account's first factor also gets
    /// recovery codes, answered here to be shown once.
    pub async fn register(
        &self,
        user: &User,
        session: &Session,
        name: &str,
        answer: &str,
        client: IpAddr,
    ) -> Result<Option<Vec<SecretString>>, PasskeyRefusal> {
        self.require_available().await?;
        self.add(session, user, name, answer, client).await
    }

    /// Starts adding a passkey as the factor the team requires, inside the pending sign-in that
    /// walks the account through set-up (its password was just given).
    pub async fn begin_enrolment(
        &self,
        session: Option<&Session>,
        name: &str,
    ) -> Result<CreationChallengeResponse, PasskeyRefusal> {
        self.require_available().await?;
        PasskeyName::parse(name).ok_or(PasskeyRefusal::BadName)?;
        let (session, user) = self.factors.pending_for(session, Purpose::Enrol).await?;
        Ok(self.passkeys.start_registration(session.id, user.id, &user.email, &user.display_name).await?)
    }

    /// Finishes that set-up: the passkey added and the session signed in on a new id, with the
    /// recovery codes to show once.
    pub async fn enrol(
        &self,
        session: Option<&Session>,
        name: &str,
        answer: &str,
        client: IpAddr,
    ) -> Result<(NewSession, Vec<SecretString>), PasskeyRefusal> {
        self.require_available().await?;
        let (session, user) = self.factors.pending_for(session, Purpose::Enrol).await?;
        let codes = self.add(&session, &user, name, answer, client).await?;
        let signed_in = self.factors.finish(&session, &user).await?;
        tracing::info!(account_id = user.id, %client, method = "passkey", "second factor passed");
        let codes = match codes {
            Some(codes) => codes,
            None => self.second_factors.new_recovery_codes(user.id).await?,
        };
        Ok((signed_in, codes))
    }

    /// Verifies the browser's new passkey and adds it; the recovery codes when it is the
    /// account's first factor.
    async fn add(
        &self,
        session: &Session,
        user: &User,
        name: &str,
        answer: &str,
        client: IpAddr,
    ) -> Result<Option<Vec<SecretString>>, PasskeyRefusal> {
        let name = PasskeyName::parse(name).ok_or(PasskeyRefusal::BadName)?;
        if let Err(error) = self.passkeys.finish_registration(session.id, user.id, &name, answer).await {
            tracing::info!(account_id = user.id, %client, reason = %error, "passkey registration refused");
            return Err(error.into());
        }
        tracing::info!(account_id = user.id, %client, "passkey registered");
        if self.second_factors.recovery_codes_left(user.id).await? > 0 {
            return Ok(None);
        }
        let codes = self.second_factors.new_recovery_codes(user.id).await?;
        tracing::info!(account_id = user.id, %client, recovery_codes = codes.len(), "recovery codes made");
        Ok(Some(codes))
    }

    /// Removes one of the account's passkeys after the current password (the recovery codes go
    /// too when no factor is left); false when the account has no such passkey.
    pub async fn remove(
        &self,
        user: &User,
        passkey_id: i64,
        password: SecretString,
        client: IpAddr,
    ) -> Result<bool, PasskeyRefusal> {
        self.confirm_password(user, password, client).await?;
        let removed = self.passkeys.remove(user.id, passkey_id).await?;
        if removed {
            self.second_factors.drop_orphaned_codes(user.id).await?;
            tracing::info!(account_id = user.id, %client, passkey_id, "passkey removed");
        }
        Ok(removed)
    }

    /// Starts a sign-in with a passkey alone on `session`, or on one made for it (answered, to be
    /// adopted) when the browser had none: anyone may ask, so a client makes only so many.
    pub async fn begin_sign_in(
        &self,
        session: Option<&Session>,
        client: IpAddr,
    ) -> Result<(RequestChallengeResponse, Option<NewSession>), PasskeyRefusal> {
        self.require_available().await?;
        let (session_id, started) = match session {
            Some(session) => (session.id, None),
            None => {
                let bucket = format!("passkey-sign-in:client:{client}");
                if let Err(RetryAfter(wait)) = self.limiter.hit(&bucket, &ANONYMOUS_STARTS).await? {
                    tracing::warn!(%client, "passkey sign-in refused: too many started from this client");
                    return Err(PasskeyRefusal::TooMany(wait));
                }
                let new = self.sessions.create().await?;
                (new.session.id, Some(new))
            }
        };
        Ok((self.passkeys.start_sign_in(session_id).await?, started))
    }

    /// Finishes a sign-in with a passkey alone: the session signed in on a new id.
    /// A browser without a session (it never asked for the options) has no ceremony to answer.
    pub async fn sign_in(
        &self,
        session: Option<&Session>,
        answer: &str,
        client: IpAddr,
    ) -> Result<NewSession, PasskeyRefusal> {
        self.require_available().await?;
        let session = session.ok_or(PasskeyRefusal::Expired)?;
        let user_id = match self.passkeys.finish_sign_in(session.id, answer).await {
            Ok(user_id) => user_id,
            Err(error) => {
                tracing::info!(%client, reason = %error, "passkey sign-in refused");
                return Err(error.into());
            }
        };
        let user = self.users.find_active(user_id).await?.ok_or(PasskeyRefusal::NotAccepted)?;
        let signed_in = self.sessions.sign_in(session.id, user.id).await?.ok_or(PasskeyRefusal::Expired)?;
        tracing::info!(account_id = user.id, %client, method = "passkey", "signed in with a passkey");
        Ok(signed_in)
    }

    /// Whether the pending sign-in's account can use a passkey as its second step.
    pub async fn offered_after_password(&self, user: &User) -> Result<bool, Fault> {
        Ok(self.passkeys.any(user.id).await? && self.available().await?)
    }

    /// Starts the second step of a pending sign-in with one of its account's passkeys.
    pub async fn begin_second_factor(
        &self,
        session: Option<&Session>,
    ) -> Result<RequestChallengeResponse, PasskeyRefusal> {
        self.require_available().await?;
        let (session, user) = self.factors.pending_for(session, Purpose::Verify).await?;
        self.passkeys.start_second_factor(session.id, user.id).await?.ok_or(PasskeyRefusal::NotAccepted)
    }

    /// Finishes the second step of a pending sign-in: signed in on a new id.
    pub async fn second_factor(
        &self,
        session: Option<&Session>,
        answer: &str,
        client: IpAddr,
    ) -> Result<NewSession, PasskeyRefusal> {
        self.require_available().await?;
        let (session, user) = self.factors.pending_for(session, Purpose::Verify).await?;
        if let Err(error) = self.passkeys.finish_second_factor(session.id, user.id, answer).await {
            tracing::info!(account_id = user.id, %client, reason = %error, "second factor failed");
            return Err(error.into());
        }
        let signed_in = self.factors.finish(&session, &user).await?;
        tracing::info!(account_id = user.id, %client, method = "passkey", "second factor passed");
        Ok(signed_in)
    }

    async fn confirm_password(
        &self,
        user: &User,
        password: SecretString,
        client: IpAddr,
    ) -> Result<(), PasskeyRefusal> {
        match confirm_current_password(&self.users, &self.limiter, user, password, client).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::info!(account_id = user.id, %client, "passkey change refused: wrong current password");
                Err(PasskeyRefusal::WrongPassword)
            }
            Err(Throttled::TooMany(wait)) => Err(PasskeyRefusal::TooMany(wait)),
            Err(Throttled::Database(error)) => Err(error.into()),
        }
    }
}
