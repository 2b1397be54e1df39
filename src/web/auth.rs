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
    accounts::{
        User, Users,
        login::{LoginError, authenticate, confirm_current_password},
        password::{self, PasswordRuleError},
        throttle::Throttled,
    },
    i18n::Text,
    secret::SecretString,
    services::accounts::{AccountError, FormProblem, NewAccountForm},
};

pub fn password_error(t: &'static Text, error: &PasswordRuleError) -> &'static str {
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
    let users = Users::new(state.db.clone());
    match authenticate(&users, &state.limiter, &form.email, SecretString::new(form.password), client.0.0).await {
        Ok(user) => {
            session.sign_in(user.id).await?;
            Ok(see_other("/shares"))
        }
        Err(LoginError::Invalid) => {
            let csrf_token = session.form_token();
            let t = c.t;
            let page = LoginPage { c, csrf_token: &csrf_token, email: &form.email, error: Some(t.login_failed) };
            render_with(StatusCode::OK, &page)
        }
        Err(LoginError::TooMany(retry_after)) => Err(AppError::TooMany { reason: "sign-in attempts", retry_after }),
        Err(LoginError::Database(error)) => Err(error.into()),
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
    let users = Users::new(state.db.clone());
    let t = c.t;
    let current_password = SecretString::new(form.current_password);
    let right = confirm_current_password(&users, &state.limiter, &user, current_password, client.0.0).await;
    let right = right.map_err(|e| throttled("password change attempts", e))?;
    let new_password = SecretString::new(form.new_password);
    let words = password::personal_words(&user.email, &user.display_name);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let error = if !right {
        tracing::info!(account_id = user.id, client = %client.0.0, "password change refused: wrong current password");
        Some(t.password_current_wrong)
    } else {
        password::check_new_password(&new_password, &words).err().map(|e| password_error(t, &e))
    };
    let changed = error.is_none();
    if changed {
        users.set_password_hash(user.id, &password::hash_password(new_password).await?).await?;
        let kept = session.regenerate().await?;
        let ended = state.sessions.end_others_for_user(user.id, kept.id).await?;
        tracing::info!(account_id = user.id, client = %client.0.0, other_sessions_ended = ended, "password changed");
    }
    // After a change the session has a new id: the token is read from it only now.
    let csrf_token = session.form_token();
    let page = AccountPage { c, csrf_token: &csrf_token, user: &user, changed, error, delete_error: None };
    render_with(if changed { StatusCode::OK } else { StatusCode::BAD_REQUEST }, &page)
}

/// A refused password attempt as the 429 page (with Retry-After), or the database failure.
pub fn throttled(reason: &'static str, error: Throttled) -> AppError {
    match error {
        Throttled::TooMany(retry_after) => AppError::TooMany { reason, retry_after },
        Throttled::Database(error) => error.into(),
    }
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
