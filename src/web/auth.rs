//! Sender accounts on the web: the first-run setup page, signing in and out. The account page is
//! in `account`.

use askama::Template;
use poem::{
    Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Html, Path, Query},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, Context,
    field_error::FieldError,
    form::Form,
    middleware::{ClientAddr, SessionHandle},
    paths, render, render_with, see_other,
};
use crate::{
    accounts::{TimeZone, password::PasswordRuleError},
    i18n::Text,
    secret::SecretString,
    services::{
        SignInMethods,
        accounts::{AccountError, FormProblem, NewAccountForm},
        second_factor::SignInStep,
    },
    session::Session,
};

/// Signing in and out: the first-run setup, passwords, the second factor's step and the set-up a
/// team's policy requires, passkeys, single sign-on.
pub fn routes(route: Route) -> Route {
    use super::{passkeys, second_factor, sso};
    route
        .at("/logout", post(logout))
        .at("/login", get(login_page).post(login_submit))
        .at("/setup/:token", get(setup_page).post(setup_submit))
        .at("/login/second-factor", get(second_factor::verify_page).post(second_factor::verify_submit))
        .at("/login/enrol", get(second_factor::enrol_page).post(second_factor::enrol_submit))
        // Passkeys: signing in alone, or as the step after a password, or as the required set-up.
        .at("/login/passkey/options", post(passkeys::sign_in_options))
        .at("/login/passkey", post(passkeys::sign_in))
        .at("/login/second-factor/passkey/options", post(passkeys::second_factor_options))
        .at("/login/second-factor/passkey", post(passkeys::second_factor))
        .at("/login/enrol/passkey/options", post(passkeys::enrolment_options))
        .at("/login/enrol/passkey", post(passkeys::enrol))
        // Single sign-on: the start and the provider's answer.
        .at("/login/sso", get(sso::start))
        .at("/login/sso/callback", get(sso::callback))
}

fn password_error(t: &'static Text, error: &PasswordRuleError) -> &'static str {
    match error {
        PasswordRuleError::TooShort => t.auth.password_too_short,
        PasswordRuleError::TooLong => t.auth.password_too_long,
        PasswordRuleError::TooGuessable => t.auth.password_too_guessable,
        PasswordRuleError::Breached => t.auth.password_breached,
    }
}

#[derive(Template)]
#[template(path = "auth/setup.html")]
struct SetupPage<'a> {
    c: Chrome,
    action: String,
    csrf_token: &'a str,
    name: &'a str,
    email: &'a str,
    error: FieldError,
}

/// The fields of the forms that sign a sender in: the setup, the sign-in and the invitation (each
/// sends those it has).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct SignInForm {
    pub name: String,
    pub email: String,
    pub password: String,
    /// The browser's zone, sent by the script.
    pub time_zone: String,
}

/// GET /setup/{token}: open only while no account exists and the token is the printed one.
#[handler]
pub async fn setup_page(
    Context { c, state, session, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Html<String>, AppError> {
    if !state.services.accounts.setup_admits(&token).await? {
        return Err(AppError::NotFound("setup closed or wrong token"));
    }
    let csrf_token = session.form_token();
    let action = paths::setup(&token);
    let page = SetupPage { c, action, csrf_token: &csrf_token, name: "", email: "", error: FieldError::NONE };
    render(&page)
}

/// POST /setup/{token}: creates the first admin and signs them in.
#[handler]
pub async fn setup_submit(
    Context { c, state, session, client, .. }: Context<'_>,
    Path(token): Path<String>,
    Form(form): Form<SignInForm>,
) -> Result<Response, AppError> {
    let new = NewAccountForm {
        name: &form.name,
        email: &form.email,
        password: SecretString::new(form.password.clone()),
        lang: c.lang,
    };
    match state.services.accounts.set_up_first_admin(&token, new, session.current().as_ref(), client).await {
        Ok(signed_in) => Ok(lead_on(state, session, SignInStep::Done(signed_in), &form.time_zone).await),
        Err(AccountError::Invalid(problem)) => {
            let csrf_token = session.form_token();
            let error = field_error(c.t, &problem, "password");
            let action = paths::setup(&token);
            let page = SetupPage { c, action, csrf_token: &csrf_token, name: &form.name, email: &form.email, error };
            render_with(StatusCode::BAD_REQUEST, &page)
        }
        Err(error) => Err(account_error(error)),
    }
}

/// What is wrong with an account form, on its field (`password_field`: the form's new password).
pub fn field_error(t: &'static Text, problem: &FormProblem, password_field: &'static str) -> FieldError {
    let field = match problem {
        FormProblem::Name => "name",
        FormProblem::Email => "email",
        FormProblem::Password(_) => password_field,
        FormProblem::CurrentPasswordWrong => "current_password",
    };
    FieldError::on(field, form_problem(t, problem))
}

/// Where a sign-in leads: signed in, to the dashboard; a second factor still due, to its step.
pub async fn lead_on(state: &AppState, session: &SessionHandle, step: SignInStep, time_zone: &str) -> Response {
    match step {
        SignInStep::Done(signed_in) => {
            adopt_browser_zone(state, &session.adopt(signed_in), time_zone).await;
            see_other(paths::SHARES)
        }
        SignInStep::Pending { purpose, started } => {
            if let Some(new) = started {
                session.adopt(new);
            }
            see_other(super::second_factor::step_path(purpose))
        }
    }
}

/// A sign-in's account without a zone takes the one its browser sent (the script fills it in;
/// without JavaScript nothing is sent and the language's default stays). Never fails the sign-in.
pub async fn adopt_browser_zone(state: &AppState, session: &Session, sent: &str) {
    let (Some(user_id), Some(zone)) = (session.user_id, TimeZone::parse(sent)) else { return };
    if let Err(error) = state.services.accounts.adopt_time_zone(user_id, zone).await {
        tracing::warn!(account_id = user_id, error = %error, "could not store the browser's time zone");
    }
}

/// The text that says what is wrong with an account form.
pub fn form_problem(t: &'static Text, problem: &FormProblem) -> &'static str {
    match problem {
        FormProblem::Name => t.auth.name_invalid,
        FormProblem::Email => t.auth.email_invalid,
        FormProblem::Password(rule) => password_error(t, rule),
        FormProblem::CurrentPasswordWrong => t.auth.password_current_wrong,
    }
}

/// An account refusal that is not a form problem, as its page.
pub fn account_error(error: AccountError) -> AppError {
    match error {
        AccountError::WrongCredentials => AppError::Forbidden("wrong credentials"),
        AccountError::TooMany(retry_after) => AppError::TooMany { reason: "password attempts", retry_after },
        AccountError::LinkClosed => AppError::NotFound("link used, expired or unknown"),
        AccountError::Exists => AppError::Gone("an account for this address exists"),
        AccountError::Invalid(_) => AppError::BadRequest("invalid account form"),
        AccountError::PasswordsOff => AppError::Forbidden("password sign-in is turned off"),
        AccountError::Fault(fault) => fault.into(),
    }
}

#[derive(Template)]
#[template(path = "auth/login.html")]
struct LoginPage<'a> {
    c: Chrome,
    /// A pending sign-in ran out (`?expired=1`): say so.
    expired: bool,
    /// A pending sign-in took its last wrong code (`?tries=1`): say so.
    tries_used_up: bool,
    /// The session ended while a new share's file was being sent (`?upload_lost=1`): say so.
    upload_lost: bool,
    csrf_token: &'a str,
    email: &'a str,
    error: FieldError,
    /// The single sign-on button's words, when it is configured.
    sso_button: Option<String>,
    /// Off: the page shows only the single sign-on button.
    passwords: bool,
    /// The passkey button (passwords on and the address has a domain).
    passkeys: bool,
    /// Why a passkey sign-in was refused.
    passkey_error: Option<&'static str>,
}

impl<'a> LoginPage<'a> {
    /// The sign-in page offering every way in the team allows, with nothing to report.
    fn new(c: Chrome, methods: &SignInMethods, csrf_token: &'a str) -> Self {
        Self {
            sso_button: super::sso::button_label(&c, methods),
            c,
            expired: false,
            tries_used_up: false,
            upload_lost: false,
            csrf_token,
            email: "",
            error: FieldError::NONE,
            passwords: methods.passwords_allowed,
            passkeys: methods.passkeys_available,
            passkey_error: None,
        }
    }
}

#[derive(Deserialize)]
pub struct LoginQuery {
    #[serde(default)]
    expired: Option<String>,
    #[serde(default)]
    tries: Option<String>,
    #[serde(default)]
    upload_lost: Option<String>,
}

/// GET /login
#[handler]
pub async fn login_page(
    Context { c, state, session, .. }: Context<'_>,
    Query(query): Query<LoginQuery>,
) -> Result<Html<String>, AppError> {
    let (methods, csrf_token) = (state.services.sign_in_methods().await?, session.form_token());
    let page = LoginPage::new(c, &methods, &csrf_token);
    let (expired, tries_used_up, upload_lost) =
        (query.expired.is_some(), query.tries.is_some(), query.upload_lost.is_some());
    render(&LoginPage { expired, tries_used_up, upload_lost, ..page })
}

/// The sign-in page answering a refused passkey (400): why, and every way in still offered.
pub async fn login_with_passkey_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    message: &'static str,
) -> Result<Response, AppError> {
    let (methods, csrf_token) = (state.services.sign_in_methods().await?, session.form_token());
    let page = LoginPage::new(c, &methods, &csrf_token);
    render_with(StatusCode::BAD_REQUEST, &LoginPage { passkey_error: Some(message), ..page })
}

/// POST /login: one answer for an unknown address and a wrong password; the session id changes
/// on success.
#[handler]
pub async fn login_submit(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<SignInForm>,
) -> Result<Response, AppError> {
    let password = SecretString::new(form.password);
    match state.services.accounts.sign_in(&form.email, password, session.current().as_ref(), client).await {
        Ok(step) => Ok(lead_on(state, session, step, &form.time_zone).await),
        Err(AccountError::WrongCredentials) => {
            let (methods, csrf_token) = (state.services.sign_in_methods().await?, session.form_token());
            let error = FieldError::whole_form(c.t.auth.login_failed);
            let page = LoginPage::new(c, &methods, &csrf_token);
            render_with(StatusCode::OK, &LoginPage { email: &form.email, error, ..page })
        }
        Err(AccountError::TooMany(retry_after)) => Err(AppError::TooMany { reason: "sign-in attempts", retry_after }),
        Err(AccountError::LinkClosed) => Err(AppError::Forbidden("session ended during sign-in")),
        Err(AccountError::PasswordsOff) => super::sso::passwords_off(c, state),
        Err(error) => Err(account_error(error)),
    }
}

/// POST /logout: ends this session (and with it any grants) and goes to the start page.
#[handler]
pub async fn logout(session: Data<&SessionHandle>, client: Data<&ClientAddr>) -> Result<Response, AppError> {
    if let Some(user_id) = session.current().and_then(|s| s.user_id) {
        tracing::info!(account_id = user_id, client = %client.0.0, "signed out");
    }
    session.end().await?;
    Ok(see_other(paths::HOME))
}
