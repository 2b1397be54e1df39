//! Sender accounts on the web: the first-run setup page, signing in and out, and the account page
//! with the password change.

use askama::Template;
use poem::{
    Response, handler,
    http::StatusCode,
    web::{Data, Form, Html, Path},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, SignedIn,
    middleware::{ClientAddr, SessionHandle},
    render, render_with, see_other,
};
use crate::{
    accounts::{User, password::PasswordRuleError},
    i18n::Text,
    secret::SecretString,
    services::accounts::{AccountError, FormProblem, NewAccountForm},
};

fn password_error(t: &'static Text, error: &PasswordRuleError) -> &'static str {
    match error {
        PasswordRuleError::TooShort => t.password_too_short,
        PasswordRuleError::TooLong => t.password_too_long,
        PasswordRuleError::TooGuessable => t.password_too_guessable,
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
    error: Option<&'static str>,
}

#[derive(Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

/// GET /setup/{token}: open only while no account exists and the token is the printed one.
#[handler]
pub async fn setup_page(
    c: Chrome,
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Html<String>, AppError> {
    if !state.services.accounts.setup_admits(&token).await? {
        return Err(AppError::NotFound("setup closed or wrong token"));
    }
    let csrf_token = session.form_token();
    let page =
        SetupPage { c, action: format!("/setup/{token}"), csrf_token: &csrf_token, name: "", email: "", error: None };
    render(&page)
}

/// POST /setup/{token}: creates the first admin and signs them in.
#[handler]
pub async fn setup_submit(
    c: Chrome,
    Path(token): Path<String>,
    Form(form): Form<SetupForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let new =
        NewAccountForm { name: &form.name, email: &form.email, password: SecretString::new(form.password.clone()) };
    match state.services.accounts.set_up_first_admin(&token, new, session.current().as_ref(), client.0.0).await {
        Ok(signed_in) => {
            session.adopt(signed_in);
            Ok(see_other("/shares"))
        }
        Err(AccountError::Invalid(problem)) => {
            let csrf_token = session.form_token();
            let error = Some(form_problem(c.t, &problem));
            let action = format!("/setup/{token}");
            let page = SetupPage { c, action, csrf_token: &csrf_token, name: &form.name, email: &form.email, error };
            render_with(StatusCode::BAD_REQUEST, &page)
        }
        Err(error) => Err(account_error(error)),
    }
}

/// The text that says what is wrong with an account form.
pub fn form_problem(t: &'static Text, problem: &FormProblem) -> &'static str {
    match problem {
        FormProblem::Name => t.name_invalid,
        FormProblem::Email => t.email_invalid,
        FormProblem::Password(rule) => password_error(t, rule),
        FormProblem::CurrentPasswordWrong => t.password_current_wrong,
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
        AccountError::Fault(fault) => fault.into(),
    }
}

#[derive(Template)]
#[template(path = "auth/login.html")]
struct LoginPage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    email: &'a str,
    error: Option<&'static str>,
}

/// GET /login
#[handler]
pub async fn login_page(c: Chrome, session: Data<&SessionHandle>) -> Result<Html<String>, AppError> {
    render(&LoginPage { c, csrf_token: &session.form_token(), email: "", error: None })
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

/// POST /login: one answer for an unknown address and a wrong password; the session id changes
/// on success.
#[handler]
pub async fn login_submit(
    c: Chrome,
    Form(form): Form<LoginForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let password = SecretString::new(form.password);
    match state.services.accounts.sign_in(&form.email, password, session.current().as_ref(), client.0.0).await {
        Ok(signed_in) => {
            session.adopt(signed_in);
            Ok(see_other("/shares"))
        }
        Err(AccountError::WrongCredentials) => {
            let csrf_token = session.form_token();
            let t = c.t;
            let page = LoginPage { c, csrf_token: &csrf_token, email: &form.email, error: Some(t.login_failed) };
            render_with(StatusCode::OK, &page)
        }
        Err(AccountError::TooMany(retry_after)) => Err(AppError::TooMany { reason: "sign-in attempts", retry_after }),
        Err(AccountError::LinkClosed) => Err(AppError::Forbidden("session ended during sign-in")),
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
    Ok(see_other("/"))
}

#[derive(Template)]
#[template(path = "auth/account.html")]
struct AccountPage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    user: &'a User,
    changed: bool,
    error: Option<&'static str>,
    /// Why the deletion form was refused (wrong password, …).
    delete_error: Option<&'static str>,
}

/// GET /account
#[handler]
pub async fn account_page(
    c: Chrome,
    session: Data<&SessionHandle>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    render(&AccountPage {
        c,
        csrf_token: &session.form_token(),
        user: &user,
        changed: false,
        error: None,
        delete_error: None,
    })
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

/// POST /account/password: asks for the current password; ends every other session.
#[handler]
pub async fn change_password(
    c: Chrome,
    Form(form): Form<PasswordForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let session_now = session.current().ok_or(AppError::SignInRequired)?;
    let (current, new) = (SecretString::new(form.current_password), SecretString::new(form.new_password));
    let changed = state.services.accounts.change_password(&user, &session_now, current, new, client.0.0).await;
    let error = match changed {
        Ok(kept) => {
            session.adopt(kept);
            None
        }
        Err(AccountError::Invalid(problem)) => Some(form_problem(c.t, &problem)),
        Err(AccountError::TooMany(retry_after)) => {
            return Err(AppError::TooMany { reason: "password change attempts", retry_after });
        }
        Err(AccountError::LinkClosed) => return Err(AppError::Forbidden("session ended during regeneration")),
        Err(error) => return Err(account_error(error)),
    };
    let changed = error.is_none();
    // After a change the session has a new id: the token is read from it only now.
    let csrf_token = session.form_token();
    let page = AccountPage { c, csrf_token: &csrf_token, user: &user, changed, error, delete_error: None };
    render_with(if changed { StatusCode::OK } else { StatusCode::BAD_REQUEST }, &page)
}

/// The account page answering a refused deletion form (400): the reason, and nothing changed.
pub fn account_with_deletion_error(
    c: Chrome,
    session: &SessionHandle,
    user: &User,
    message: &'static str,
) -> Result<Response, AppError> {
    let csrf_token = session.form_token();
    let page =
        AccountPage { c, csrf_token: &csrf_token, user, changed: false, error: None, delete_error: Some(message) };
    render_with(StatusCode::BAD_REQUEST, &page)
}
