//! The second factor's use cases: what a right password leads to (signed in, a code to enter, or
//! an app to set up first), entering a code or a recovery code, setting an app up and removing
//! it, new recovery codes, an admin's reset and the team's policy. Codes are guessed no faster
//! than passwords, and slower across clients: see `accounts::second_factor::tries`.

use std::{net::IpAddr, time::Duration};

use super::{Fault, Parts, mails::Mails};
use crate::{
    accounts::{
        User, Users,
        login::confirm_current_password,
        policy::{SignInPolicies, SignInPolicy},
        second_factor::{
            AppSecret, PendingSignIns, Purpose, Removed, SecondFactors, TotpCheck, totp,
            tries::{self, Verdict, guarded_code},
        },
        throttle::{Throttled, guarded},
    },
    ratelimit::RateLimiter,
    secret::SecretString,
    session::{NewSession, Session, Sessions},
};

#[derive(Debug, thiserror::Error)]
pub enum FactorError {
    /// No live pending sign-in on this session (never begun, expired, or the account was disabled).
    #[error("no pending sign-in")]
    NoPendingSignIn,
    #[error("wrong code")]
    WrongCode,
    /// A wrong code used the pending sign-in's last try: it ended, the password is asked again.
    #[error("the pending sign-in took its last wrong code")]
    TriesUsedUp,
    #[error("wrong current password")]
    WrongPassword,
    /// Nothing to confirm: no set-up is waiting, or the app is already on.
    #[error("no set-up waiting")]
    NotWaiting,
    #[error("too many attempts")]
    TooMany(Duration),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for FactorError {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<anyhow::Error> for FactorError {
    fn from(error: anyhow::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<Throttled> for FactorError {
    fn from(error: Throttled) -> Self {
        match error {
            Throttled::TooMany(wait) => Self::TooMany(wait),
            Throttled::Database(error) => error.into(),
        }
    }
}

/// Where a right password leads.
#[derive(Debug)]
pub enum SignInStep {
    /// Signed in (no factor, none required), on a new session id.
    Done(NewSession),
    /// Not signed in yet: the session owes `purpose`. `started` is the session made for it, when
    /// the browser had none.
    Pending { purpose: Purpose, started: Option<NewSession> },
}

/// A session's pending sign-in: whose, and what it still needs.
pub struct Pending {
    pub user: User,
    pub purpose: Purpose,
}

/// What the account page says of the factors.
#[derive(Debug, Default)]
pub struct FactorStatus {
    pub totp: bool,
    /// Any factor, an app or a passkey: recovery codes stand in for them.
    pub any: bool,
    /// A set-up was started and waits for its first code.
    pub totp_waiting: bool,
    pub recovery_codes_left: i64,
}

/// What an admin's (or the command line's) reset removed.
#[derive(Debug)]
pub struct Reset {
    pub removed: Removed,
    pub sessions_ended: u64,
}

/// How a code was accepted.
enum Passed {
    Totp,
    RecoveryCode,
}

#[derive(Clone)]
pub struct Factors {
    factors: SecondFactors,
    pending: PendingSignIns,
    policies: SignInPolicies,
    users: Users,
    sessions: Sessions,
    limiter: RateLimiter,
    mails: Mails,
}

impl Factors {
    pub fn new(parts: &Parts, sessions: Sessions) -> Self {
        Self {
            factors: SecondFactors::new(parts.db.clone(), &parts.secret_key),
            pending: PendingSignIns::new(parts.db.clone()),
            policies: SignInPolicies::new(parts.db.clone()),
            users: Users::new(parts.db.clone()),
            sessions,
            limiter: RateLimiter::new(parts.db.clone()),
            mails: Mails::new(parts),
        }
    }

    /// After a right password: signs in, or leaves the session owing a code (the account has a
    /// factor) or a set-up (the team requires a factor and the account has none).
    pub async fn after_password(&self, user: &User, session: Option<&Session>) -> Result<SignInStep, Fault> {
        let (session_id, started) = match session {
            Some(session) => (session.id, None),
            None => {
                let new = self.sessions.create().await?;
                (new.session.id, Some(new))
            }
        };
        let purpose = if self.factors.enrolled(user.id).await? {
            Purpose::Verify
        } else if self.policies.current().await?.require_second_factor {
            self.factors.start_totp(user.id).await?;
            Purpose::Enrol
        } else {
            let signed_in = self.sessions.sign_in(session_id, user.id).await?;
            return signed_in.map(SignInStep::Done).ok_or_else(|| Fault::Internal(anyhow::anyhow!("session ended")));
        };
        self.pending.begin(session_id, user.id, purpose).await?;
        tries::reset_sign_in(&self.limiter, &user.email, session_id).await?;
        Ok(SignInStep::Pending { purpose, started })
    }

    /// The session's live pending sign-in, if any.
    pub async fn pending(&self, session: Option<&Session>) -> Result<Option<Pending>, Fault> {
        let Some(session) = session.filter(|s| s.user_id.is_none()) else { return Ok(None) };
        let Some((user_id, purpose)) = self.pending.find(session.id).await? else { return Ok(None) };
        Ok(self.users.find_active(user_id).await?.map(|user| Pending { user, purpose }))
    }

    /// The pending sign-in of `session` for `purpose`, or the refusal that sends the person back.
    pub(super) async fn pending_for(
        &self,
        session: Option<&Session>,
        purpose: Purpose,
    ) -> Result<(Session, User), FactorError> {
        let found = self.pending(session).await?.filter(|p| p.purpose == purpose);
        match (session, found) {
            (Some(session), Some(pending)) => Ok((session.clone(), pending.user)),
            _ => Err(FactorError::NoPendingSignIn),
        }
    }

    /// Ends a pending sign-in with the session signed in, on a new id.
    pub(super) async fn finish(&self, session: &Session, user: &User) -> Result<NewSession, FactorError> {
        if !self.pending.take(session.id, user.id).await? {
            return Err(FactorError::NoPendingSignIn);
        }
        self.sessions.sign_in(session.id, user.id).await?.ok_or(FactorError::NoPendingSignIn)
    }

    /// The second step of a sign-in: an app's code or a recovery code. The pending sign-in's
    /// last wrong try ends it, and the owner is told by mail (see `tries`).
    pub async fn verify(
        &self,
        session: Option<&Session>,
        code: SecretString,
        client: IpAddr,
    ) -> Result<NewSession, FactorError> {
        let (session, user) = self.pending_for(session, Purpose::Verify).await?;
        let app = self.factors.app_secret(user.id, false).await?;
        let check = async {
            let passed = match &app {
                Some(app) if totp::looks_like_totp(code.expose()) => {
                    match self.factors.check_totp(user.id, app, &code).await? {
                        TotpCheck::Accepted => Some(Passed::Totp),
                        TotpCheck::Replayed => {
                            tracing::info!(account_id = user.id, %client, "second factor refused: code already used");
                            None
                        }
                        TotpCheck::Wrong => None,
                    }
                }
                _ => self.factors.use_recovery_code(user.id, &code).await?.then_some(Passed::RecoveryCode),
            };
            Ok(passed)
        };
        let passed = match guarded_code(&self.limiter, &user.email, session.id, client, check).await? {
            Verdict::Passed(passed) => passed,
            Verdict::Wrong { ended: false } => {
                tracing::info!(account_id = user.id, %client, "second factor failed");
                return Err(FactorError::WrongCode);
            }
            Verdict::Wrong { ended: true } => {
                self.pending.end(session.id).await?;
                tracing::warn!(account_id = user.id, %client, tries = tries::TRIES_PER_SIGN_IN, "second factor failed: the pending sign-in ended");
                self.mails.warn_of_wrong_codes(&user).await;
                return Err(FactorError::TriesUsedUp);
            }
        };
        let signed_in = self.finish(&session, &user).await?;
        match passed {
            Passed::Totp => tracing::info!(account_id = user.id, %client, method = "totp", "second factor passed"),
            Passed::RecoveryCode => {
                let left = self.factors.recovery_codes_left(user.id).await?;
                tracing::info!(account_id = user.id, %client, recovery_codes_left = left, "recovery code used");
                tracing::info!(account_id = user.id, %client, method = "recovery_code", "second factor passed");
            }
        }
        Ok(signed_in)
    }

    /// What the set-up page shows: the waiting set-up of the pending sign-in's account.
    pub async fn enrolment(&self, session: Option<&Session>) -> Result<(User, totp::Provisioning), FactorError> {
        let (_, user) = self.pending_for(session, Purpose::Enrol).await?;
        let app = self.factors.app_secret(user.id, true).await?.ok_or(FactorError::NoPendingSignIn)?;
        let shown = app.provisioning(&user.email);
        Ok((user, shown))
    }

    /// Confirms the set-up a pending sign-in walked through and signs the session in; answers the
    /// new recovery codes, to be shown once.
    pub async fn enrol_and_sign_in(
        &self,
        session: Option<&Session>,
        code: SecretString,
        client: IpAddr,
    ) -> Result<(NewSession, Vec<SecretString>), FactorError> {
        let (session, user) = self.pending_for(session, Purpose::Enrol).await?;
        let codes = self.confirm(&user, &code, client).await?;
        let signed_in = self.finish(&session, &user).await?;
        tracing::info!(account_id = user.id, %client, method = "totp", "second factor passed");
        Ok((signed_in, codes))
    }

    /// Whether the account has a working authenticator app.
    pub async fn has_app(&self, user: &User) -> Result<bool, Fault> {
        Ok(self.factors.has_app(user.id).await?)
    }

    /// The account's factors, for its page.
    pub async fn status(&self, user: &User) -> Result<FactorStatus, Fault> {
        let totp = self.factors.has_app(user.id).await?;
        Ok(FactorStatus {
            any: self.factors.enrolled(user.id).await?,
            totp,
            totp_waiting: self.factors.app_secret(user.id, true).await?.is_some(),
            recovery_codes_left: self.factors.recovery_codes_left(user.id).await?,
        })
    }

    /// Starts setting up an app from the account page (a fresh secret each time) after the current
    /// password: a stolen session must not tie the owner's next sign-in to an app the thief holds.
    /// Nothing starts when the account already has an app.
    pub async fn start_totp(&self, user: &User, password: SecretString, client: IpAddr) -> Result<(), FactorError> {
        self.confirm_password(user, password, client).await?;
        if self.factors.start_totp(user.id).await? {
            tracing::info!(account_id = user.id, %client, "TOTP set-up started");
        }
        Ok(())
    }

    /// What the account's set-up page shows, while one waits for its first code.
    pub async fn waiting_setup(&self, user: &User) -> Result<Option<totp::Provisioning>, Fault> {
        Ok(self.factors.app_secret(user.id, true).await?.map(|app| app.provisioning(&user.email)))
    }

    /// Confirms the account's waiting set-up with its first code and the current password (a
    /// session taken while a set-up waits must not finish it with the taker's own app); answers
    /// the new recovery codes.
    pub async fn confirm_totp(
        &self,
        user: &User,
        code: SecretString,
        password: SecretString,
        client: IpAddr,
    ) -> Result<Vec<SecretString>, FactorError> {
        self.confirm_password(user, password, client).await?;
        self.confirm(user, &code, client).await
    }

    async fn confirm(
        &self,
        user: &User,
        code: &SecretString,
        client: IpAddr,
    ) -> Result<Vec<SecretString>, FactorError> {
        let app: AppSecret = self.factors.app_secret(user.id, true).await?.ok_or(FactorError::NotWaiting)?;
        let check = async { Ok(self.factors.confirm_totp(user.id, &app, code).await?.then_some(())) };
        if guarded(&self.limiter, &tries::code_key(&user.email), client, check).await?.is_none() {
            tracing::info!(account_id = user.id, %client, "TOTP set-up refused: wrong code");
            return Err(FactorError::WrongCode);
        }
        let codes = self.factors.new_recovery_codes(user.id).await?;
        tracing::info!(account_id = user.id, %client, recovery_codes = codes.len(), "TOTP enrolled");
        Ok(codes)
    }

    /// Removes the app (and the recovery codes, unless a passkey is left for them to stand in
    /// for) after the current password is given again.
    pub async fn remove_totp(&self, user: &User, password: SecretString, client: IpAddr) -> Result<(), FactorError> {
        self.confirm_password(user, password, client).await?;
        self.factors.remove_app(user.id).await?;
        tracing::info!(account_id = user.id, %client, "TOTP removed");
        Ok(())
    }

    /// A new set of recovery codes (the old ones stop working) after the current password.
    pub async fn renew_recovery_codes(
        &self,
        user: &User,
        password: SecretString,
        client: IpAddr,
    ) -> Result<Vec<SecretString>, FactorError> {
        self.confirm_password(user, password, client).await?;
        if !self.factors.enrolled(user.id).await? {
            return Err(FactorError::NotWaiting);
        }
        let codes = self.factors.new_recovery_codes(user.id).await?;
        tracing::info!(account_id = user.id, %client, recovery_codes = codes.len(), "recovery codes renewed");
        Ok(codes)
    }

    async fn confirm_password(&self, user: &User, password: SecretString, client: IpAddr) -> Result<(), FactorError> {
        if confirm_current_password(&self.users, &self.limiter, user, password, client).await? {
            Ok(())
        } else {
            tracing::info!(account_id = user.id, %client, "second factor change refused: wrong current password");
            Err(FactorError::WrongPassword)
        }
    }

    /// Removes every factor of `member` and ends all their sessions (and pending sign-ins).
    /// `by`: the admin; `None`: the command line. A member who had nothing is reset all the same.
    pub async fn reset(&self, member: &User, by: Option<&User>, client: Option<IpAddr>) -> Result<Reset, Fault> {
        let removed = self.factors.remove_all(member.id).await?;
        self.pending.drop_all_for(member.id).await?;
        let sessions_ended = self.sessions.end_all_for_user(member.id).await?;
        let by_account_id = by.map(|admin| admin.id);
        let client = client.map(|c| c.to_string()).unwrap_or_else(|| "command line".to_owned());
        let Removed { totp, passkeys, recovery_codes } = removed;
        tracing::info!(account_id = member.id, ?by_account_id, %client, totp, passkeys, recovery_codes, sessions_ended, "second factors reset");
        Ok(Reset { removed, sessions_ended })
    }

    pub async fn policy(&self) -> Result<SignInPolicy, Fault> {
        Ok(self.policies.current().await?)
    }

    /// Turns the team's "every sign-in needs a second factor" on or off (passwords stay as set).
    pub async fn require_second_factor(&self, admin: &User, on: bool, client: IpAddr) -> Result<(), Fault> {
        let policy = SignInPolicy { require_second_factor: on, ..self.policies.current().await? };
        self.policies.set(policy, Some(admin.id)).await?;
        tracing::info!(account_id = admin.id, %client, require_second_factor = on, "sign-in policy changed");
        Ok(())
    }
}
