//! Single sign-on on the web: `GET /login/sso` sends the browser to the provider, `GET
//! /login/sso/callback` takes its answer; every refusal is a page that says what happened and
//! leads back to the sign-in page. The team's switch between passwords and single sign-on only
//! is `POST /team/sign-in-methods`.

use askama::Template;
use poem::{Response, handler, http::StatusCode, web::Query};
use serde::Deserialize;

use super::{Admin, AppError, AppState, Chrome, Context, form::Form, paths, render_with, see_other};
use crate::services::{
    SignInMethods,
    sso::{Answer, Refusal, SsoError},
};

/// The sign-in button's words, when single sign-on is configured.
pub fn button_label(c: &Chrome, methods: &SignInMethods) -> Option<String> {
    methods.sso_name.as_deref().map(|name| c.t.auth.sso.with_name(c.t.auth.sso.button, name))
}

#[derive(Template)]
#[template(path = "auth/sso_refused.html")]
struct RefusedPage {
    c: Chrome,
    status: u16,
    reason: &'static str,
    title: String,
    lines: Vec<String>,
}

/// A page that says why the person is not signed in, with the way back to the sign-in page.
fn refused_page(
    c: Chrome,
    status: StatusCode,
    reason: &'static str,
    title: String,
    lines: Vec<String>,
) -> Result<Response, AppError> {
    render_with(status, &RefusedPage { c, status: status.as_u16(), reason, title, lines })
}

/// The page of a refused single sign-on.
fn refusal(c: Chrome, state: &AppState, refusal: Refusal) -> Result<Response, AppError> {
    let s = &c.t.auth.sso;
    let text = match refusal {
        Refusal::Denied => s.denied,
        Refusal::UnknownState | Refusal::Expired => s.unknown_state,
        Refusal::CodeRefused => s.code_refused,
        Refusal::TokenRefused => s.token_refused,
        Refusal::EmailUnverified => s.email_unverified,
        Refusal::NoAccount => s.no_account,
        Refusal::Disabled => s.disabled,
        Refusal::SubjectMismatch => s.subject_mismatch,
        Refusal::LinkNeedsSignIn => s.link_needs_sign_in,
    };
    let status = match refusal {
        Refusal::UnknownState | Refusal::Expired | Refusal::CodeRefused => StatusCode::BAD_REQUEST,
        _ => StatusCode::FORBIDDEN,
    };
    let name = state.services.sso.name().unwrap_or_default();
    let lines = vec![s.with_name(text, name)];
    refused_page(c, status, refusal.code(), s.refused_title.to_owned(), lines)
}

/// The provider cannot be reached: 503, and the password form if passwords are on.
async fn unavailable(c: Chrome, state: &AppState) -> Result<Response, AppError> {
    let s = &c.t.auth.sso;
    let methods = state.services.sign_in_methods().await?;
    let name = methods.sso_name.as_deref().unwrap_or_default();
    let mut lines = vec![s.with_name(s.unavailable_body, name)];
    if methods.passwords_allowed {
        lines.push(s.unavailable_passwords.to_owned());
    }
    refused_page(c, StatusCode::SERVICE_UNAVAILABLE, "unavailable", s.with_name(s.unavailable_title, name), lines)
}

/// The refusal of a password use while passwords are off (403).
pub fn passwords_off(c: Chrome, state: &AppState) -> Result<Response, AppError> {
    let s = &c.t.auth.sso;
    let name = state.services.sso.name().unwrap_or_default();
    let lines = vec![s.with_name(s.passwords_off_body, name)];
    refused_page(c, StatusCode::FORBIDDEN, "passwords_off", s.passwords_off_title.to_owned(), lines)
}

async fn sso_error(c: Chrome, state: &AppState, error: SsoError) -> Result<Response, AppError> {
    match error {
        SsoError::NotConfigured => Err(AppError::NotFound("single sign-on is not configured")),
        SsoError::Unavailable => unavailable(c, state).await,
        SsoError::Refused(reason) => refusal(c, state, reason),
        SsoError::Fault(fault) => Err(fault.into()),
    }
}

/// GET /login/sso: starts a sign-in, remembered in a sealed cookie of its own (no row, no
/// session), and sends the browser to the provider.
#[handler]
pub async fn start(Context { c, state, session, client, .. }: Context<'_>) -> Result<Response, AppError> {
    if state.services.sso.name().is_none() {
        return Err(AppError::NotFound("single sign-on is not configured"));
    }
    match state.services.sso.start(client).await {
        Ok((url, pending)) => {
            session.set_pending_sso(pending, crate::sso::pending::PENDING_TTL);
            Ok(see_other(&url))
        }
        Err(error) => sso_error(c, state, error).await,
    }
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    #[serde(default)]
    state: String,
    code: Option<String>,
    error: Option<String>,
}

/// GET /login/sso/callback: the provider's answer. Success signs the session in on a new id.
#[handler]
pub async fn callback(
    Context { c, state, session, client, .. }: Context<'_>,
    Query(query): Query<CallbackQuery>,
) -> Result<Response, AppError> {
    let answer = Answer { state: &query.state, code: query.code.as_deref(), error: query.error.as_deref() };
    let pending = session.pending_sso();
    let finished = state.services.sso.finish(session.current().as_ref(), pending.as_deref(), answer, client).await;
    // An answer for another sign-in (a forged state) leaves this browser's own one waiting.
    if !matches!(finished, Err(SsoError::Refused(Refusal::UnknownState))) {
        session.end_pending_sso();
    }
    match finished {
        Ok(signed_in) => {
            session.adopt(signed_in);
            Ok(see_other(paths::SHARES))
        }
        Err(error) => sso_error(c, state, error).await,
    }
}

#[derive(Deserialize)]
pub struct MethodsForm {
    /// `on` or `off`.
    #[serde(default)]
    passwords: String,
}

/// POST /team/sign-in-methods: turns password sign-in off (only with single sign-on configured)
/// or back on, then back to the team page.
#[handler]
pub async fn set_methods(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<MethodsForm>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let allowed = match form.passwords.as_str() {
        "on" => true,
        "off" => false,
        _ => return Err(AppError::BadRequest("passwords must be on or off")),
    };
    match state.services.sso.set_passwords_allowed(Some(&user), allowed, Some(client)).await {
        Ok(_) => Ok(see_other(&paths::team_done("sign-in-methods"))),
        Err(SsoError::NotConfigured) => {
            let message = c.t.auth.sso.not_configured;
            super::team::page_with_error(c, state, session, &user, message).await
        }
        Err(error) => sso_error(c, state, error).await,
    }
}
