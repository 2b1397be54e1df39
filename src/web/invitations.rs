//! Invitations: the team page's waiting ones (admins only) are sent again with a new link or
//! cancelled, each leading back to the team page with a notice, so a reload repeats nothing; the
//! link itself (/invite/{token}) lets the invited person choose a name and password, once, for 72
//! hours.

use askama::Template;
use poem::{
    Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Html, Path},
};

use super::{
    Admin, AppError, AppState, Chrome, Context,
    auth::{SignInForm, account_error, field_error, lead_on},
    field_error::FieldError,
    form::Form,
    paths, render, render_with, see_other,
};
use crate::{secret::SecretString, services::accounts::AccountError};

/// The changes to one waiting invitation, and the invitation link.
pub fn routes(route: Route) -> Route {
    route
        .at("/team/invitations/:id/resend", post(resend))
        .at("/team/invitations/:id/cancel", post(cancel))
        .at("/invite/:token", get(invitation_page).post(accept))
}

/// POST /team/invitations/{id}/resend: mails a new link; the earlier one stops working.
#[handler]
pub async fn resend(Path(id): Path<i64>, state: Data<&AppState>, Admin(user): Admin) -> Result<Response, AppError> {
    if state.services.accounts.resend_invitation(&user, id).await? {
        return Ok(see_other(&paths::team_invitation_done("resent", id)));
    }
    Ok(see_other(paths::TEAM))
}

/// POST /team/invitations/{id}/cancel: the link stops working.
#[handler]
pub async fn cancel(Path(id): Path<i64>, state: Data<&AppState>, Admin(user): Admin) -> Result<Response, AppError> {
    if state.services.accounts.cancel_invitation(&user, id).await? {
        return Ok(see_other(&paths::team_done("cancelled")));
    }
    Ok(see_other(paths::TEAM))
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
    /// The single sign-on button's words, when it is configured.
    sso_button: Option<String>,
    /// Off: the invitation is accepted by single sign-on only.
    passwords: bool,
}

/// GET /invite/{token}
#[handler]
pub async fn invitation_page(
    Context { c, state, session, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Html<String>, AppError> {
    let invitation = state.services.accounts.invitation(&token).await.map_err(invitation_error)?;
    let methods = state.services.sign_in_methods().await?;
    render(&InvitePage {
        sso_button: super::sso::button_label(&c, &methods),
        passwords: methods.passwords_allowed,
        c,
        action: paths::invitation(&token),
        csrf_token: &session.form_token(),
        email: &invitation.email,
        name: "",
        error: FieldError::NONE,
    })
}

/// POST /invite/{token}: creates the account (once) and signs the new sender in.
#[handler]
pub async fn accept(
    Context { c, state, session, client, .. }: Context<'_>,
    Path(token): Path<String>,
    Form(form): Form<SignInForm>,
) -> Result<Response, AppError> {
    let password = SecretString::new(form.password);
    let accounts = &state.services.accounts;
    match accounts.accept_invitation(&token, &form.name, password, c.lang, session.current().as_ref(), client).await {
        Ok(step) => Ok(lead_on(state, session, step, &form.time_zone).await),
        Err(AccountError::Invalid(problem)) => {
            let invitation = accounts.invitation(&token).await.map_err(invitation_error)?;
            let csrf_token = session.form_token();
            let error = field_error(c.t, &problem, "password");
            let action = paths::invitation(&token);
            let (email, name) = (&invitation.email, &form.name);
            let sso_button = super::sso::button_label(&c, &state.services.sign_in_methods().await?);
            let page =
                InvitePage { c, action, csrf_token: &csrf_token, email, name, error, sso_button, passwords: true };
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
