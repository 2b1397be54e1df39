//! Sender accounts' use cases: the first admin through the printed setup link, signing in,
//! invitations, a password change, disabling a member, and `watasu user add`. Every new account
//! passes the same name and password rules, wherever it is made.

use std::{net::IpAddr, sync::Arc, time::Duration};

use super::{
    Fault, Parts,
    mails::Mails,
    second_factor::{Factors, SignInStep},
};
use crate::{
    accounts::{
        CreateUserError, DisplayName, EmailAddress, Role, Team, TimeZone, User, Users,
        invitations::{AcceptError, Invitation, Invitations, PendingInvitation},
        login::{LoginError, authenticate, confirm_current_password},
        password::{self, PasswordRuleError},
        policy::SignInPolicies,
        setup::SetupGate,
        throttle::Throttled,
    },
    config::Config,
    i18n::Lang,
    ratelimit::RateLimiter,
    secret::SecretString,
    session::{NewSession, Session, Sessions},
};

/// What is wrong with a filled-in account form; each has its own text on the page.
#[derive(Debug, PartialEq, Eq)]
pub enum FormProblem {
    Name,
    Email,
    Password(PasswordRuleError),
    CurrentPasswordWrong,
}

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("unknown address or wrong password")]
    WrongCredentials,
    #[error("too many attempts")]
    TooMany(Duration),
    #[error("the link is used, expired or unknown")]
    LinkClosed,
    #[error("an account with this email address already exists")]
    Exists,
    /// Password sign-in is turned off (single sign-on only).
    #[error("password sign-in is turned off")]
    PasswordsOff,
    #[error("the form is not acceptable: {0:?}")]
    Invalid(FormProblem),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for AccountError {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<anyhow::Error> for AccountError {
    fn from(error: anyhow::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<Throttled> for AccountError {
    fn from(error: Throttled) -> Self {
        match error {
            Throttled::TooMany(wait) => Self::TooMany(wait),
            Throttled::Database(error) => error.into(),
        }
    }
}

/// A new account's name and password, checked against the rules (the password must not be made
/// of the address or the name).
fn check_new_account(name: &str, email: &str, password: &SecretString) -> Result<DisplayName, AccountError> {
    let name = DisplayName::parse(name).map_err(|_| AccountError::Invalid(FormProblem::Name))?;
    check_password(password, email, name.as_str())?;
    Ok(name)
}

fn check_password(password: &SecretString, email: &str, name: &str) -> Result<(), AccountError> {
    let words = password::personal_words(email, name);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    password::check_new_password(password, &words).map_err(|e| AccountError::Invalid(FormProblem::Password(e)))
}

#[derive(Clone)]
pub struct Accounts {
    config: Arc<Config>,
    users: Users,
    invitations: Invitations,
    sessions: Sessions,
    limiter: RateLimiter,
    setup: Arc<SetupGate>,
    mails: Mails,
    uploads: crate::uploads::UploadRepository,
    factors: Factors,
    policies: SignInPolicies,
}

impl Accounts {
    pub fn new(parts: &Parts, sessions: Sessions, mails: Mails, factors: Factors) -> Self {
        Self {
            config: parts.config.clone(),
            users: Users::new(parts.db.clone()),
            invitations: Invitations::new(parts.db.clone()),
            sessions,
            limiter: RateLimiter::new(parts.db.clone()),
            setup: Arc::default(),
            mails,
            uploads: crate::uploads::UploadRepository::new(parts.db.clone()),
            factors,
            policies: SignInPolicies::new(parts.db.clone()),
        }
    }

    /// Whether the team signs in with passwords (off: single sign-on only). Without single
    /// sign-on configured they stay on whatever the policy says, or nobody could sign in.
    pub async fn passwords_allowed(&self) -> Result<bool, Fault> {
        Ok(self.config.sso.is_none() || self.policies.current().await?.passwords_allowed)
    }

    /// Refuses a password use (sign-in, change, invitation) while passwords are off.
    async fn require_passwords(&self) -> Result<(), AccountError> {
        if self.passwords_allowed().await? { Ok(()) } else { Err(AccountError::PasswordsOff) }
    }

    /// While no account exists: opens the setup gate and answers the link that creates the first
    /// admin (printed at start-up).
    pub async fn open_setup(&self) -> Result<Option<String>, Fault> {
        if self.users.count().await? > 0 {
            return Ok(None);
        }
        let token = self.setup.open();
        Ok(Some(self.config.url_for(&format!("/setup/{}", token.expose()))))
    }

    /// Whether `token` is the open setup link's, and no account exists yet.
    pub async fn setup_admits(&self, token: &str) -> Result<bool, Fault> {
        Ok(self.setup.admits(token) && self.users.count().await? == 0)
    }

    /// Creates the first admin and signs them in on a new session id.
    pub async fn set_up_first_admin(
        &self,
        token: &str,
        form: NewAccountForm<'_>,
        session: Option<&Session>,
        client: IpAddr,
    ) -> Result<NewSession, AccountError> {
        if !self.setup_admits(token).await? {
            return Err(AccountError::LinkClosed);
        }
        let name = DisplayName::parse(form.name).map_err(|_| AccountError::Invalid(FormProblem::Name))?;
        let email = EmailAddress::parse(form.email).map_err(|_| AccountError::Invalid(FormProblem::Email))?;
        check_password(&form.password, form.email, name.as_str())?;
        // One caller wins the gate, so two racing forms cannot both create an admin.
        if !self.setup.consume(token) {
            return Err(AccountError::LinkClosed);
        }
        let hash = password::hash_password(form.password).await?;
        let user_id =
            self.users.create(&email, name.as_str(), &hash, Role::Admin, form.lang).await.map_err(create_error)?;
        tracing::info!(account_id = user_id, %client, "first admin account created");
        self.start_session(session, user_id).await
    }

    /// Signs a sender in: the same answer for an unknown address and a wrong password. A right
    /// password leads on to a second factor when the account has one or the team requires one.
    pub async fn sign_in(
        &self,
        email: &str,
        password: SecretString,
        session: Option<&Session>,
        client: IpAddr,
    ) -> Result<SignInStep, AccountError> {
        self.require_passwords().await?;
        let user = authenticate(&self.users, &self.limiter, email, password, client).await.map_err(|e| match e {
            LoginError::Invalid => AccountError::WrongCredentials,
            LoginError::TooMany(wait) => AccountError::TooMany(wait),
            LoginError::Database(error) => error.into(),
        })?;
        let step = self.factors.after_password(&user, session).await?;
        if let SignInStep::Done(_) = step {
            tracing::info!(account_id = user.id, %client, "signed in with a password alone");
        }
        Ok(step)
    }

    /// The browser's session signed in as `user_id`, on a new id (a privilege change).
    async fn start_session(&self, session: Option<&Session>, user_id: i64) -> Result<NewSession, AccountError> {
        let session_id = match session {
            Some(session) => session.id,
            None => self.sessions.create().await?.session.id,
        };
        self.sessions.sign_in(session_id, user_id).await?.ok_or(AccountError::LinkClosed)
    }

    /// The signed-in account of a session, unless it was disabled since.
    pub async fn signed_in(&self, session: Option<&Session>) -> Result<Option<User>, Fault> {
        let Some(user_id) = session.and_then(|s| s.user_id) else { return Ok(None) };
        Ok(self.users.find_active(user_id).await?)
    }

    /// An enabled account by its address (the CLI names senders so).
    pub async fn active_by_email(&self, email: &EmailAddress) -> Result<Option<User>, Fault> {
        Ok(self.users.find_by_email(email).await?.filter(|u| !u.disabled))
    }

    /// The current password asked again (a deletion form), under the sign-in limits.
    pub async fn confirm_password(
        &self,
        user: &User,
        password: SecretString,
        client: IpAddr,
    ) -> Result<bool, AccountError> {
        Ok(confirm_current_password(&self.users, &self.limiter, user, password, client).await?)
    }

    /// Changes the password after the current one is given again; the session moves to a new
    /// id and every other session of the account ends.
    pub async fn change_password(
        &self,
        user: &User,
        session: &Session,
        current: SecretString,
        new: SecretString,
        client: IpAddr,
    ) -> Result<NewSession, AccountError> {
        self.require_passwords().await?;
        if !self.confirm_password(user, current, client).await? {
            tracing::info!(account_id = user.id, %client, "password change refused: wrong current password");
            return Err(AccountError::Invalid(FormProblem::CurrentPasswordWrong));
        }
        check_password(&new, &user.email, &user.display_name)?;
        self.users.set_password_hash(user.id, &password::hash_password(new).await?).await?;
        let kept = self.sessions.regenerate(session.id).await?.ok_or(AccountError::LinkClosed)?;
        let ended = self.sessions.end_others_for_user(user.id, kept.session.id).await?;
        tracing::info!(account_id = user.id, %client, other_sessions_ended = ended, "password changed");
        Ok(kept)
    }

    /// Stores the zone a sender reads times in (`None`: follow the page language).
    pub async fn set_time_zone(&self, user: &User, zone: Option<TimeZone>) -> Result<(), Fault> {
        Ok(self.users.set_time_zone(user.id, zone).await?)
    }

    /// Gives an account without a chosen zone the one its browser reported at sign-in.
    pub async fn adopt_time_zone(&self, user_id: i64, zone: TimeZone) -> Result<(), Fault> {
        Ok(self.users.adopt_time_zone(user_id, zone).await?)
    }

    /// Every account, admins first, then by name, and which can be enabled again.
    pub async fn team(&self) -> Result<Team, Fault> {
        Ok(self.users.list().await?)
    }

    /// Invites a new sender: an invitation link, mailed in the language the admin chose. Returns
    /// the invitation's id.
    pub async fn invite(&self, admin: &User, email: &str, lang: Lang) -> Result<i64, AccountError> {
        let email = EmailAddress::parse(email).map_err(|_| AccountError::Invalid(FormProblem::Email))?;
        if self.users.find_by_email(&email).await?.is_some() {
            return Err(AccountError::Exists);
        }
        let (id, token) = self.invitations.create(&email, Role::Sender, admin.id, lang).await?;
        self.mail_invitation(email.as_str(), lang, &token).await?;
        tracing::info!(account_id = admin.id, invitation_id = id, "invitation sent");
        Ok(id)
    }

    /// The invitations whose links still work, for the team page.
    pub async fn pending_invitations(&self) -> Result<Vec<PendingInvitation>, Fault> {
        Ok(self.invitations.pending().await?)
    }

    /// Mails an unused invitation again with a new link (the old one stops working), valid from
    /// now; false when it was used or cancelled meanwhile.
    pub async fn resend_invitation(&self, admin: &User, id: i64) -> Result<bool, Fault> {
        let Some((email, lang, token)) = self.invitations.renew(id).await? else { return Ok(false) };
        self.mail_invitation(&email, lang, &token).await?;
        tracing::info!(account_id = admin.id, invitation_id = id, "invitation sent again");
        Ok(true)
    }

    /// Mails an invitation's link.
    async fn mail_invitation(&self, email: &str, lang: Lang, token: &SecretString) -> Result<(), Fault> {
        let link = self.config.url_for(&format!("/invite/{}", token.expose()));
        self.mails.invite(email, lang, &link).await
    }

    /// Cancels an unused invitation: its link stops working.
    pub async fn cancel_invitation(&self, admin: &User, id: i64) -> Result<bool, Fault> {
        let cancelled = self.invitations.cancel(id).await?;
        if cancelled {
            tracing::info!(account_id = admin.id, invitation_id = id, "invitation cancelled");
        }
        Ok(cancelled)
    }

    /// The open invitation behind a link.
    pub async fn invitation(&self, token: &str) -> Result<Invitation, AccountError> {
        self.invitations.find_open(token).await?.ok_or(AccountError::LinkClosed)
    }

    /// Uses an invitation (once) to create the account, and leads on as a right password does:
    /// signed in, or first through setting up a factor when the team requires one.
    pub async fn accept_invitation(
        &self,
        token: &str,
        name: &str,
        password: SecretString,
        lang: Lang,
        session: Option<&Session>,
        client: IpAddr,
    ) -> Result<SignInStep, AccountError> {
        self.require_passwords().await?;
        let invitation = self.invitation(token).await?;
        let name = check_new_account(name, &invitation.email, &password)?;
        let hash = password::hash_password(password).await?;
        let user_id = match self.invitations.accept(&invitation, name.as_str(), &hash, lang).await {
            Ok(id) => id,
            Err(AcceptError::NotOpen) => return Err(AccountError::LinkClosed),
            Err(AcceptError::DuplicateEmail) => return Err(AccountError::Exists),
            Err(AcceptError::Database(error)) => return Err(error.into()),
        };
        tracing::info!(account_id = user_id, %client, "invitation used");
        let user = self.users.find_active(user_id).await?.ok_or(AccountError::LinkClosed)?;
        Ok(self.factors.after_password(&user, session).await?)
    }

    /// Disables an account (not one's own): it can no longer sign in, its sessions end now, and
    /// its resumable uploads expire now so the GC frees their space.
    pub async fn disable(&self, admin: &User, id: i64, client: IpAddr) -> Result<bool, Fault> {
        if !self.users.disable(id, admin.id).await? {
            return Ok(false);
        }
        let ended = self.sessions.end_all_for_user(id).await?;
        self.uploads.expire_all_of(id).await?;
        tracing::info!(account_id = admin.id, disabled_account_id = id, sessions_ended = ended, %client, "account disabled");
        Ok(true)
    }

    /// Enables a disabled account again (not one's own, not one being deleted): it can sign in
    /// with its password again.
    pub async fn enable(&self, admin: &User, id: i64, client: IpAddr) -> Result<bool, Fault> {
        if !self.users.enable(id, admin.id).await? {
            return Ok(false);
        }
        tracing::info!(account_id = admin.id, enabled_account_id = id, %client, "account enabled");
        Ok(true)
    }

    /// Creates an account from the command line, under the same rules as the pages.
    pub async fn add(&self, form: NewAccountForm<'_>, role: Role) -> Result<i64, AccountError> {
        let email = EmailAddress::parse(form.email).map_err(|_| AccountError::Invalid(FormProblem::Email))?;
        let name = check_new_account(form.name, email.as_str(), &form.password)?;
        let hash = password::hash_password(form.password).await?;
        self.users.create(&email, name.as_str(), &hash, role, form.lang).await.map_err(create_error)
    }

    /// Sets the language of the mails about the account.
    pub async fn set_lang(&self, user: &User, lang: Lang) -> Result<(), Fault> {
        Ok(self.users.set_lang(user.id, lang).await?)
    }

    /// The language the new-share form offers for the recipient's mail: the sender's last
    /// choice, else the page's.
    pub async fn share_mail_lang(&self, user: &User, page: Lang) -> Result<Lang, Fault> {
        Ok(self.users.share_mail_lang(user.id).await?.unwrap_or(page))
    }

    /// Remembers the recipient mail language the sender chose, for their next share.
    pub async fn remember_share_mail_lang(&self, user: &User, lang: Lang) -> Result<(), Fault> {
        Ok(self.users.set_share_mail_lang(user.id, lang).await?)
    }
}

/// A new account as typed.
pub struct NewAccountForm<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub password: SecretString,
    /// The language it signs up in: that of the mails about it, until changed.
    pub lang: Lang,
}

fn create_error(error: CreateUserError) -> AccountError {
    match error {
        CreateUserError::DuplicateEmail => AccountError::Exists,
        CreateUserError::Database(error) => error.into(),
    }
}
