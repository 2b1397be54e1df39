//! The second factor on the web: the code step of signing in (`/login/second-factor`), the set-up
//! a team policy walks an account through before it is signed in (`/login/enrol`), the account's
//! own set-up, removal and new recovery codes, and the page that shows recovery codes once.

use askama::Template;
use poem::{Response, handler, http::StatusCode};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, Context, SignedIn, form::Form, middleware::SessionHandle, paths, render_with, see_other,
};
use crate::{
    accounts::second_factor::{Purpose, totp::Provisioning},
    secret::SecretString,
    services::second_factor::FactorError,
};

/// Where a pending sign-in goes next.
pub fn step_path(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::Verify => paths::SECOND_FACTOR,
        Purpose::Enrol => paths::ENROL,
    }
}

#[derive(Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    code: String,
}

/// The code step's two forms: the app's code, or a recovery code (`recovery` says which was used,
/// so a refusal is shown next to the field it was typed in).
#[derive(Deserialize)]
pub struct VerifyForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    recovery: bool,
}

#[derive(Deserialize)]
pub struct ConfirmForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    password: String,
}

#[derive(Template)]
#[template(path = "auth/second_factor.html")]
struct VerifyPage {
    c: Chrome,
    csrf_token: String,
    error: Option<&'static str>,
    /// The account has an app: the page asks for its code (else for a passkey or a recovery code).
    app: bool,
    /// The account's passkeys can answer instead of a code.
    passkey: bool,
    passkey_error: Option<&'static str>,
    /// The refused code was a recovery code: its form is open and carries the error.
    recovery: bool,
}

impl VerifyPage {
    /// The page for the session's pending sign-in; `None` when there is none to verify.
    async fn of(
        c: Chrome,
        state: &AppState,
        session: &SessionHandle,
        error: Option<&'static str>,
        passkey_error: Option<&'static str>,
    ) -> Result<Option<Self>, AppError> {
        let Some(pending) = state.services.factors.pending(session.current().as_ref()).await? else { return Ok(None) };
        if pending.purpose != Purpose::Verify {
            return Ok(None);
        }
        let (app, passkey) = (
            state.services.factors.has_app(&pending.user).await?,
            state.services.passkeys.offered_after_password(&pending.user).await?,
        );
        let csrf_token = session.form_token();
        Ok(Some(Self { c, csrf_token, error, app, passkey, passkey_error, recovery: false }))
    }
}

/// The code step answering a refused passkey (400), or back to sign-in when it ran out.
pub async fn verify_with_passkey_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    message: &'static str,
) -> Result<Response, AppError> {
    match VerifyPage::of(c, state, session, None, Some(message)).await? {
        Some(page) => render_with(StatusCode::BAD_REQUEST, &page),
        None => Ok(see_other(paths::LOGIN_EXPIRED)),
    }
}

/// GET /login/second-factor
#[handler]
pub async fn verify_page(Context { c, state, session, .. }: Context<'_>) -> Result<Response, AppError> {
    match VerifyPage::of(c, state, session, None, None).await? {
        Some(page) => render_with(StatusCode::OK, &page),
        None => Ok(see_other(paths::LOGIN_EXPIRED)),
    }
}

/// POST /login/second-factor: an app's code or a recovery code; the session id changes on success.
#[handler]
pub async fn verify_submit(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<VerifyForm>,
) -> Result<Response, AppError> {
    let code = SecretString::new(form.code);
    match state.services.factors.verify(session.current().as_ref(), code, client).await {
        Ok(signed_in) => {
            session.adopt(signed_in);
            Ok(see_other(paths::SHARES))
        }
        Err(FactorError::WrongCode) => {
            let error = Some(c.t.auth.second_factor.code_wrong);
            match VerifyPage::of(c, state, session, error, None).await? {
                Some(page) => render_with(StatusCode::OK, &VerifyPage { recovery: form.recovery, ..page }),
                None => Ok(see_other(paths::LOGIN_EXPIRED)),
            }
        }
        Err(error) => factor_error(error),
    }
}

/// A refusal that is not a wrong code, as its answer.
fn factor_error(error: FactorError) -> Result<Response, AppError> {
    match error {
        FactorError::NoPendingSignIn => Ok(see_other(paths::LOGIN_EXPIRED)),
        FactorError::TriesUsedUp => Ok(see_other(paths::LOGIN_TRIES_USED_UP)),
        FactorError::TooMany(retry_after) => Err(AppError::TooMany { reason: "second factor attempts", retry_after }),
        FactorError::NotWaiting => Ok(see_other(paths::ACCOUNT_SECOND_FACTOR)),
        FactorError::WrongCode | FactorError::WrongPassword => Err(AppError::BadRequest("wrong code or password")),
        FactorError::Fault(fault) => Err(fault.into()),
    }
}

#[derive(Template)]
#[template(path = "auth/enrol.html")]
struct EnrolPage {
    c: Chrome,
    csrf_token: String,
    setup: Provisioning,
    /// Where the code form posts.
    action: &'static str,
    /// The account page's set-up (signed in) rather than the sign-in's.
    signed_in_setup: bool,
    error: Option<&'static str>,
    /// `error` is about the current password (the account's set-up asks it with the code).
    password_wrong: bool,
    /// The sign-in's set-up also offers a passkey (where passkeys can be used).
    passkey: bool,
    passkey_error: Option<&'static str>,
}

/// GET /login/enrol: the set-up the team's policy requires before signing in.
#[handler]
pub async fn enrol_page(Context { c, state, session, .. }: Context<'_>) -> Result<Response, AppError> {
    match state.services.factors.enrolment(session.current().as_ref()).await {
        Ok((_, setup)) => enrol_with(c, state, session, setup, paths::ENROL, None).await,
        Err(error) => factor_error(error),
    }
}

/// What a set-up page's form was refused for.
enum SetUpError {
    Code(&'static str),
    Password(&'static str),
}

impl SetUpError {
    fn message(self) -> &'static str {
        match self {
            Self::Code(message) | Self::Password(message) => message,
        }
    }
}

async fn enrol_with(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    setup: Provisioning,
    action: &'static str,
    error: Option<SetUpError>,
) -> Result<Response, AppError> {
    let signed_in_setup = action != paths::ENROL;
    let passkey = !signed_in_setup && state.services.sign_in_methods().await?.passkeys_available;
    let csrf_token = session.form_token();
    let password_wrong = matches!(error, Some(SetUpError::Password(_)));
    let error = error.map(SetUpError::message);
    let page = EnrolPage {
        c,
        csrf_token,
        setup,
        action,
        signed_in_setup,
        error,
        password_wrong,
        passkey,
        passkey_error: None,
    };
    render_with(if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, &page)
}

/// The sign-in's set-up answering a refused passkey (400), or back to sign-in when it ran out.
pub async fn enrol_with_passkey_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    message: &'static str,
) -> Result<Response, AppError> {
    let (_, setup) = match state.services.factors.enrolment(session.current().as_ref()).await {
        Ok(found) => found,
        Err(error) => return factor_error(error),
    };
    let csrf_token = session.form_token();
    let page = EnrolPage {
        c,
        csrf_token,
        setup,
        action: paths::ENROL,
        signed_in_setup: false,
        error: None,
        password_wrong: false,
        passkey: true,
        passkey_error: Some(message),
    };
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// POST /login/enrol: confirms the app, signs the session in and shows the recovery codes once.
#[handler]
pub async fn enrol_submit(
    Context { c, state, session, client, req }: Context<'_>,
    Form(form): Form<CodeForm>,
) -> Result<Response, AppError> {
    let factors = &state.services.factors;
    match factors.enrol_and_sign_in(session.current().as_ref(), SecretString::new(form.code), client).await {
        Ok((signed_in, codes)) => {
            session.adopt(signed_in);
            recovery_codes(Chrome::for_request(req), session, codes, paths::SHARES)
        }
        Err(FactorError::WrongCode) => {
            let (_, setup) = match factors.enrolment(session.current().as_ref()).await {
                Ok(found) => found,
                Err(error) => return factor_error(error),
            };
            let error = Some(SetUpError::Code(c.t.auth.second_factor.code_wrong));
            enrol_with(c, state, session, setup, paths::ENROL, error).await
        }
        Err(error) => factor_error(error),
    }
}

#[derive(Template)]
#[template(path = "auth/recovery_codes.html")]
struct RecoveryCodesPage {
    c: Chrome,
    codes: Vec<SecretString>,
    next: &'static str,
}

/// The recovery codes, shown once in the answer to the form that made them (never stored).
pub fn recovery_codes(
    mut c: Chrome,
    session: &SessionHandle,
    codes: Vec<SecretString>,
    next: &'static str,
) -> Result<Response, AppError> {
    c.csrf_token = session.form_token();
    let mut response = render_with(StatusCode::OK, &RecoveryCodesPage { c, codes, next })?;
    response.headers_mut().insert("Cache-Control", poem::http::HeaderValue::from_static("no-store"));
    Ok(response)
}

/// POST /account/totp: starts setting up an app with a fresh secret, after the current password.
#[handler]
pub async fn start_setup(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasswordForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let started = state.services.factors.start_totp(&user, SecretString::new(form.password), client).await;
    after_password(started, c, state, session, &user, |_, ()| Ok(see_other(paths::TOTP_SETUP))).await
}

/// GET /account/totp: the waiting set-up (QR code, key, code field).
#[handler]
pub async fn setup_page(
    Context { c, state, session, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    match state.services.factors.waiting_setup(&user).await? {
        Some(setup) => enrol_with(c, state, session, setup, paths::TOTP_SETUP, None).await,
        None => Ok(see_other(paths::ACCOUNT_SECOND_FACTOR)),
    }
}

/// POST /account/totp/confirm: confirms the waiting set-up with its first code and the current
/// password, and shows the recovery codes once.
#[handler]
pub async fn confirm_setup(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<ConfirmForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let factors = &state.services.factors;
    let (code, password) = (SecretString::new(form.code), SecretString::new(form.password));
    let error = match factors.confirm_totp(&user, code, password, client).await {
        Ok(codes) => return recovery_codes(c, session, codes, paths::ACCOUNT),
        Err(FactorError::WrongCode) => SetUpError::Code(c.t.auth.second_factor.code_wrong),
        Err(FactorError::WrongPassword) => SetUpError::Password(c.t.auth.password_current_wrong),
        Err(error) => return factor_error(error),
    };
    match factors.waiting_setup(&user).await? {
        Some(setup) => enrol_with(c, state, session, setup, paths::TOTP_SETUP, Some(error)).await,
        None => Ok(see_other(paths::ACCOUNT_SECOND_FACTOR)),
    }
}

/// POST /account/totp/remove: asks for the current password.
#[handler]
pub async fn remove(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasswordForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let removed = state.services.factors.remove_totp(&user, SecretString::new(form.password), client).await;
    after_password(removed, c, state, session, &user, |_, ()| {
        Ok(see_other(&paths::account_saved("second-factor", "second-factor")))
    })
    .await
}

/// POST /account/recovery-codes: a new set after the current password; the old set stops working.
#[handler]
pub async fn renew_codes(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasswordForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let factors = &state.services.factors;
    let renewed = factors.renew_recovery_codes(&user, SecretString::new(form.password), client).await;
    after_password(renewed, c, state, session, &user, |c, codes| recovery_codes(c, session, codes, paths::ACCOUNT))
        .await
}

/// The answer to an account form that asked for the current password: `done` with what the change
/// gave, or the account page marking the password when it was wrong.
async fn after_password<T>(
    outcome: Result<T, FactorError>,
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    user: &crate::accounts::User,
    done: impl FnOnce(Chrome, T) -> Result<Response, AppError>,
) -> Result<Response, AppError> {
    match outcome {
        Ok(value) => done(c, value),
        Err(FactorError::WrongPassword) => {
            let message = c.t.auth.password_current_wrong;
            super::account::account_with_factor_error(c, state, session, user, message).await
        }
        Err(error) => factor_error(error),
    }
}
