//! Single sign-on's use cases: starting a sign-in at the provider, taking its answer back to an
//! account (found by a verified address, created for an allowed domain, or made from an open
//! invitation), and the team's switch between passwords and single sign-on only. Every outcome
//! is logged as an authentication event with the account and the client, never a code or token.

use std::{net::IpAddr, sync::Arc};

use super::{Fault, Parts};
use crate::{
    accounts::{
        DisplayName, EmailAddress, Role, User, Users,
        invitations::{AcceptError, Invitations},
        password,
        policy::{SignInPolicies, SignInPolicy},
    },
    config::SsoConfig,
    secret::random_token,
    session::{NewSession, Session, Sessions},
    sso::{Identity, Link, PendingLogins, Provider, ProviderError, SsoLinks},
};

/// Why a single sign-on was refused; each has its own words on the page and its code in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The person (or the provider) declined at the provider.
    Denied,
    /// The `state` is not a pending sign-in of this session: forged, used already, or lost.
    UnknownState,
    /// The sign-in took longer than its ten minutes.
    Expired,
    /// The provider refused the code: expired, replayed, or not issued to us.
    CodeRefused,
    /// The ID token failed a check (signature, issuer, audience, expiry, nonce).
    TokenRefused,
    /// The provider did not vouch for the address.
    EmailUnverified,
    /// No account, no allowed domain, no open invitation.
    NoAccount,
    Disabled,
    /// The address arrived with another subject than the one linked to the account.
    SubjectMismatch,
    /// The account has a password (and maybe factors) of its own and no subject yet: it is linked
    /// only from a browser signed in to it with them.
    LinkNeedsSignIn,
}

impl Refusal {
    /// The reason code in the log.
    pub fn code(self) -> &'static str {
        match self {
            Self::Denied => "denied",
            Self::UnknownState => "unknown_state",
            Self::Expired => "expired",
            Self::CodeRefused => "code_refused",
            Self::TokenRefused => "token_refused",
            Self::EmailUnverified => "email_unverified",
            Self::NoAccount => "no_account",
            Self::Disabled => "disabled",
            Self::SubjectMismatch => "subject_mismatch",
            Self::LinkNeedsSignIn => "link_needs_sign_in",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("single sign-on is not configured")]
    NotConfigured,
    /// The provider cannot be reached now (503).
    #[error("the provider is unavailable")]
    Unavailable,
    #[error("single sign-on refused: {}", .0.code())]
    Refused(Refusal),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for SsoError {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<anyhow::Error> for SsoError {
    fn from(error: anyhow::Error) -> Self {
        Self::Fault(error.into())
    }
}

/// The provider's answer as the callback received it.
pub struct Answer<'a> {
    pub state: &'a str,
    pub code: Option<&'a str>,
    /// `error` of a refused authorization (`access_denied`, …).
    pub error: Option<&'a str>,
}

#[derive(Clone)]
pub struct SingleSignOn {
    config: Option<Arc<SsoConfig>>,
    provider: Option<Provider>,
    pending: PendingLogins,
    links: SsoLinks,
    users: Users,
    invitations: Invitations,
    sessions: Sessions,
    policies: SignInPolicies,
}

impl SingleSignOn {
    pub fn new(parts: &Parts, sessions: Sessions) -> Self {
        let config = parts.config.sso.clone().map(Arc::new);
        Self {
            provider: config.clone().map(Provider::new),
            config,
            pending: PendingLogins::new(&parts.secret_key),
            links: SsoLinks::new(parts.db.clone()),
            users: Users::new(parts.db.clone()),
            invitations: Invitations::new(parts.db.clone()),
            sessions,
            policies: SignInPolicies::new(parts.db.clone()),
        }
    }

    /// The provider's name for the button, when single sign-on is configured.
    pub fn name(&self) -> Option<&str> {
        self.config.as_deref().map(|c| c.name.as_str())
    }

    /// Starts a sign-in; answers the provider's URL to send the browser to and the value of the
    /// cookie that remembers the sign-in until the answer (nothing is stored here).
    pub async fn start(&self, client: IpAddr) -> Result<(String, String), SsoError> {
        let provider = self.provider.as_ref().ok_or(SsoError::NotConfigured)?;
        let authorization = provider.authorize().await.map_err(|e| unavailable(e, client))?;
        let (state, nonce, verifier) = (&authorization.state, &authorization.nonce, &authorization.pkce_verifier);
        let cookie = self.pending.seal(state, nonce, verifier);
        tracing::info!(%client, "single sign-on started");
        Ok((authorization.url, cookie))
    }

    /// Takes the provider's answer: checks it belongs to the sign-in this browser's `pending`
    /// cookie remembers, exchanges the code, finds or makes the account, and signs the browser
    /// in on a new session id.
    pub async fn finish(
        &self,
        session: Option<&Session>,
        pending: Option<&str>,
        answer: Answer<'_>,
        client: IpAddr,
    ) -> Result<NewSession, SsoError> {
        let provider = self.provider.as_ref().ok_or(SsoError::NotConfigured)?;
        let refuse = |refusal: Refusal, account_id: Option<i64>| {
            tracing::info!(account_id, %client, reason = refusal.code(), "single sign-on refused");
            SsoError::Refused(refusal)
        };
        let pending = pending.and_then(|cookie| self.pending.open(cookie, answer.state));
        if let Some(error) = answer.error {
            // Only the standard's short codes are worth logging; anything else is dropped.
            let error = if error.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') { error } else { "other" };
            tracing::info!(%client, provider_error = error, "the provider answered with an error");
            return Err(refuse(Refusal::Denied, None));
        }
        let Some(pending) = pending else {
            return Err(refuse(Refusal::UnknownState, None));
        };
        if !pending.live {
            return Err(refuse(Refusal::Expired, None));
        }
        let code = answer.code.ok_or_else(|| refuse(Refusal::CodeRefused, None))?;
        let identity = match provider.identify(code, &pending.pkce_verifier, &pending.nonce_hash).await {
            Ok(identity) => identity,
            Err(ProviderError::CodeRefused(error)) => {
                tracing::info!(%client, provider_error = %error, "the provider refused the code");
                return Err(refuse(Refusal::CodeRefused, None));
            }
            Err(ProviderError::TokenRefused { reason, detail }) => {
                tracing::info!(%client, check = reason, detail = %detail, "the ID token failed a check");
                return Err(refuse(Refusal::TokenRefused, None));
            }
            Err(error) => return Err(unavailable(error, client)),
        };
        let signed_in_as = session.and_then(|s| s.user_id);
        let user = self.account_for(&identity, signed_in_as, client).await.map_err(|e| match e {
            SsoError::Refused(refusal) => refuse(refusal, None),
            other => other,
        })?;
        if user.disabled {
            return Err(refuse(Refusal::Disabled, Some(user.id)));
        }
        match self.links.link(user.id, &identity.subject).await? {
            Link::Linked => tracing::info!(account_id = user.id, %client, "single sign-on subject linked"),
            Link::Same => {}
            Link::Conflict => return Err(refuse(Refusal::SubjectMismatch, Some(user.id))),
        }
        let session_id = match session {
            Some(session) => session.id,
            None => self.sessions.create().await?.session.id,
        };
        let signed_in = self.sessions.sign_in(session_id, user.id).await?;
        let signed_in = signed_in.ok_or_else(|| refuse(Refusal::UnknownState, Some(user.id)))?;
        tracing::info!(account_id = user.id, %client, "signed in by single sign-on");
        Ok(signed_in)
    }

    /// The account a checked identity signs in as: the one linked to its subject; an existing
    /// one of its verified address, linked only inside the allowed domains and only from a
    /// browser already signed in to it (`signed_in`: its password, and its factor if it has one,
    /// were given there), so neither the provider nor anyone with an address there can skip
    /// them; else a new one for an allowed domain; else the one an open invitation creates.
    async fn account_for(&self, identity: &Identity, signed_in: Option<i64>, client: IpAddr) -> Result<User, SsoError> {
        let email = match (&identity.email, identity.email_verified) {
            (Some(email), true) => {
                EmailAddress::parse(email).map_err(|_| SsoError::Refused(Refusal::EmailUnverified))?
            }
            _ => return Err(SsoError::Refused(Refusal::EmailUnverified)),
        };
        let domain = email.as_str().rsplit('@').next().unwrap_or_default();
        let config = self.config.as_deref().ok_or(SsoError::NotConfigured)?;
        if let Some(user) = self.users.find_by_email(&email).await? {
            if user.disabled {
                return Err(SsoError::Refused(Refusal::Disabled));
            }
            return match self.links.subject_of(user.id).await? {
                Some(subject) if subject == identity.subject => Ok(user),
                Some(_) => Err(SsoError::Refused(Refusal::SubjectMismatch)),
                None if !config.allows_domain(domain) => Err(SsoError::Refused(Refusal::NoAccount)),
                None if signed_in != Some(user.id) => Err(SsoError::Refused(Refusal::LinkNeedsSignIn)),
                None => Ok(user),
            };
        }
        let name = display_name(identity.name.as_deref(), &email);
        // A hash of a secret nobody keeps: it never verifies, yet takes as long as any other.
        let unusable = password::hash_password(random_token()).await?;
        let id = if config.allows_domain(domain) {
            // No page language reaches this far: the account starts in the default one.
            match self.users.create(&email, name.as_str(), &unusable, Role::Sender, crate::i18n::Lang::default()).await
            {
                Ok(id) => {
                    tracing::info!(account_id = id, %client, "account created by single sign-on");
                    id
                }
                // Created meanwhile by a racing sign-in: take that one.
                Err(crate::accounts::CreateUserError::DuplicateEmail) => return self.existing(&email).await,
                Err(crate::accounts::CreateUserError::Database(e)) => return Err(e.into()),
            }
        } else {
            let Some(invitation) = self.invitations.find_open_for(&email).await? else {
                return Err(SsoError::Refused(Refusal::NoAccount));
            };
            // The inviter's choice of language stands in for the page's.
            match self.invitations.accept(&invitation, name.as_str(), &unusable, invitation.lang).await {
                Ok(id) => {
                    tracing::info!(account_id = id, %client, "invitation used by single sign-on");
                    id
                }
                Err(AcceptError::NotOpen) => return Err(SsoError::Refused(Refusal::NoAccount)),
                Err(AcceptError::DuplicateEmail) => return self.existing(&email).await,
                Err(AcceptError::Database(e)) => return Err(e.into()),
            }
        };
        self.users.find_active(id).await?.ok_or(SsoError::Refused(Refusal::Disabled))
    }

    async fn existing(&self, email: &EmailAddress) -> Result<User, SsoError> {
        self.users.find_by_email(email).await?.ok_or(SsoError::Refused(Refusal::NoAccount))
    }

    /// The team's sign-in policy.
    pub async fn policy(&self) -> Result<SignInPolicy, Fault> {
        Ok(self.policies.current().await?)
    }

    /// Turns password sign-in off or on; off only while single sign-on is configured (or nobody
    /// could sign in). `admin`: None for the command line.
    pub async fn set_passwords_allowed(
        &self,
        admin: Option<&User>,
        allowed: bool,
        client: Option<IpAddr>,
    ) -> Result<bool, SsoError> {
        if !allowed && self.config.is_none() {
            return Err(SsoError::NotConfigured);
        }
        let current = self.policies.current().await?;
        if current.passwords_allowed == allowed {
            return Ok(false);
        }
        let account_id = admin.map(|a| a.id);
        self.policies.set(SignInPolicy { passwords_allowed: allowed, ..current }, account_id).await?;
        let client = client.map(|c| c.to_string());
        tracing::info!(
            account_id,
            client = client.as_deref().unwrap_or("cli"),
            passwords_allowed = allowed,
            "sign-in policy changed"
        );
        Ok(true)
    }
}

/// The name a new account shows: the provider's `name` if it is a valid one, else the address.
fn display_name(name: Option<&str>, email: &EmailAddress) -> DisplayName {
    name.and_then(|n| DisplayName::parse(n).ok())
        .or_else(|| DisplayName::parse(email.as_str()).ok())
        .or_else(|| DisplayName::parse(email.as_str().split('@').next().unwrap_or_default()).ok())
        .unwrap_or_else(|| DisplayName::parse("?").expect("a valid name"))
}

/// The provider did not answer: logged with the cause (no secret is in it), a 503 for the person.
fn unavailable(error: ProviderError, client: IpAddr) -> SsoError {
    tracing::warn!(%client, error = %error, "single sign-on provider unavailable");
    SsoError::Unavailable
}
