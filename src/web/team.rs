//! The team page (admins only): invite senders by email, list and disable accounts. A disabled
//! sender's sessions end at once; their active shares keep working unless revoked. Invitation
//! links (/invite/{token}) let the invited person choose a name and password, once, for 72 hours.

use askama::Template;
use poem::{
    Response, handler,
    http::StatusCode,
    web::{Data, Form, Html, Path},
};
use serde::Deserialize;

use super::{
    Admin, AppError, AppState, Chrome,
    auth::{account_error, adopt_browser_zone, field_error},
    field_error::FieldError,
    middleware::{ClientAddr, SessionHandle},
    render, render_with, see_other,
};
use crate::{accounts::User, secret::SecretString, services::accounts::AccountError};

#[derive(Template)]
#[template(path = "admin/team.html")]
struct TeamPage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    members: Vec<User>,
    me: i64,
    invited: bool,
    error: Option<&'static str>,
}

impl TeamPage<'_> {
    /// The member's role in the reader's language.
    fn role_text(&self, member: &User) -> &'static str {
        if member.is_admin() { self.c.t.role_admin } else { self.c.t.role_sender }
    }
}

/// The team page as `me` (an admin) sees it; with an error, a 400 that says what was refused.
async fn team_page(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    me: &User,
    invited: bool,
    error: Option<&'static str>,
) -> Result<Response, AppError> {
    let members = state.services.accounts.team().await?;
    let csrf_token = session.form_token();
    let page = TeamPage { c, csrf_token: &csrf_token, members, me: me.id, invited, error };
    render_with(if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, &page)
}

/// GET /team
#[handler]
pub async fn show(
    c: Chrome,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    team_page(c, &state, &session, &user, false, None).await
}

#[derive(Deserialize)]
pub struct InviteForm {
    #[serde(default)]
    email: String,
}

/// POST /team/invite: creates the invitation and mails its link through the outbox.
#[handler]
pub async fn invite(
    c: Chrome,
    Form(form): Form<InviteForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let t = c.t;
    let error = match state.services.accounts.invite(&user, &form.email).await {
        Ok(()) => return team_page(c, &state, &session, &user, true, None).await,
        Err(AccountError::Invalid(_)) => t.email_invalid,
        Err(AccountError::Exists) => t.team_exists,
        Err(error) => return Err(account_error(error)),
    };
    team_page(c, &state, &session, &user, false, Some(error)).await
}

/// POST /team/{id}/disable: the account can no longer sign in and its sessions end now.
#[handler]
pub async fn disable(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    client: Data<&ClientAddr>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    state.services.accounts.disable(&user, id, client.0.0).await?;
    Ok(see_other("/team"))
}

#[derive(Template)]
#[template(path = "auth/invite.html")]
struct InvitePage<'a> {
    c: Chrome,
    action: String,
    csrf_token: &'a str,
    email: &'a str,
    /// The name typed into a refused form, kept.
    name: &'a str,
    error: FieldError,
}

/// GET /invite/{token}
#[handler]
pub async fn invitation_page(
    c: Chrome,
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Html<String>, AppError> {
    let invitation = state.services.accounts.invitation(&token).await.map_err(invitation_error)?;
    render(&InvitePage {
        c,
        action: format!("/invite/{token}"),
        csrf_token: &session.form_token(),
        email: &invitation.email,
        name: "",
        error: FieldError::NONE,
    })
}

#[derive(Deserialize)]
pub struct AcceptForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    /// The browser's zone, sent by the script.
    #[serde(default)]
    time_zone: String,
}

/// POST /invite/{token}: creates the account (once) and signs the new sender in.
#[handler]
pub async fn accept(
    c: Chrome,
    Path(token): Path<String>,
    Form(form): Form<AcceptForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let password = SecretString::new(form.password);
    let accounts = &state.services.accounts;
    match accounts.accept_invitation(&token, &form.name, password, session.current().as_ref(), client.0.0).await {
        Ok(signed_in) => {
            adopt_browser_zone(&state, &session.adopt(signed_in), &form.time_zone).await;
            Ok(see_other("/shares"))
        }
        Err(AccountError::Invalid(problem)) => {
            let invitation = accounts.invitation(&token).await.map_err(invitation_error)?;
            let csrf_token = session.form_token();
            let error = field_error(c.t, &problem, "password");
            let action = format!("/invite/{token}");
            let (email, name) = (&invitation.email, &form.name);
            let page = InvitePage { c, action, csrf_token: &csrf_token, email, name, error };
            render_with(StatusCode::BAD_REQUEST, &page)
        }
        Err(error) => Err(invitation_error(error)),
    }
}

/// A refused invitation link as its page: used, expired or unknown, or its address taken meanwhile.
fn invitation_error(error: AccountError) -> AppError {
    match error {
        AccountError::LinkClosed => AppError::NotAvailable("invitation used, expired or unknown"),
        AccountError::Exists => AppError::Gone("an account for this address exists"),
        error => account_error(error),
    }
}

/// The team page with a refusal for the admin to read (400).
pub async fn page_with_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    me: &User,
    message: &'static str,
) -> Result<Response, AppError> {
    team_page(c, state, session, me, false, Some(message)).await
}
