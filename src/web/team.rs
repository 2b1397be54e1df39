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
    middleware::{ClientAddr, SessionHandle},
    render, render_with, see_other,
};
use crate::{
    accounts::{
        EmailAddress, Role, User, Users,
        invitations::{AcceptError, Invitations},
        password,
    },
    mail::{
        messages::invitation_mail,
        outbox::{MailKind, Outbox},
    },
    secret::SecretString,
};

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
    let members = Users::new(state.db.clone()).list().await?;
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
    let Ok(email) = EmailAddress::parse(&form.email) else {
        return team_page(c, &state, &session, &user, false, Some(t.email_invalid)).await;
    };
    let users = Users::new(state.db.clone());
    if users.find_by_email(&email).await?.is_some() {
        return team_page(c, &state, &session, &user, false, Some(t.team_exists)).await;
    }
    let token = Invitations::new(state.db.clone()).create(&email, Role::Sender, user.id).await?;
    let link = state.config.url_for(&format!("/invite/{}", token.expose()));
    let lang = crate::i18n::Lang::from_code(&user.lang).unwrap_or_default();
    let message = invitation_mail(&state.config.settings.mail_from, email.as_str(), lang, &link)?;
    let outbox = Outbox::new(state.db.clone(), &state.secret_key);
    outbox
        .queue(None, MailKind::Invitation, &message, state.mailer.clone())
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    tracing::info!(account_id = user.id, "invitation sent");
    team_page(c, &state, &session, &user, true, None).await
}

/// POST /team/{id}/disable: the account can no longer sign in and its sessions end now.
#[handler]
pub async fn disable(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    client: Data<&ClientAddr>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    if Users::new(state.db.clone()).disable(id, user.id).await? {
        let ended = state.sessions.end_all_for_user(id).await?;
        tracing::info!(account_id = user.id, disabled_account_id = id, sessions_ended = ended, client = %client.0.0, "account disabled");
    }
    Ok(see_other("/team"))
}

#[derive(Template)]
#[template(path = "auth/invite.html")]
struct InvitePage<'a> {
    c: Chrome,
    action: String,
    csrf_token: &'a str,
    email: &'a str,
    error: Option<&'static str>,
}

/// GET /invite/{token}
#[handler]
pub async fn invitation_page(
    c: Chrome,
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Html<String>, AppError> {
    let invitation = Invitations::new(state.db.clone())
        .find_open(&token)
        .await?
        .ok_or(AppError::NotAvailable("invitation used, expired or unknown"))?;
    render(&InvitePage {
        c,
        action: format!("/invite/{token}"),
        csrf_token: &session.form_token(),
        email: &invitation.email,
        error: None,
    })
}

#[derive(Deserialize)]
pub struct AcceptForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
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
    let invitations = Invitations::new(state.db.clone());
    let invitation =
        invitations.find_open(&token).await?.ok_or(AppError::NotAvailable("invitation used, expired or unknown"))?;
    let t = c.t;
    let name = &crate::accounts::clean_display_name(&form.name);
    let password = SecretString::new(form.password);
    let words = password::personal_words(&invitation.email, name);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let error = if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        Some(t.name_invalid)
    } else {
        password::check_new_password(&password, &words).err().map(|e| super::auth::password_error(t, &e))
    };
    if let Some(error) = error {
        let csrf_token = session.form_token();
        let page = InvitePage {
            c,
            action: format!("/invite/{token}"),
            csrf_token: &csrf_token,
            email: &invitation.email,
            error: Some(error),
        };
        return render_with(StatusCode::BAD_REQUEST, &page);
    }
    let hash = password::hash_password(password).await?;
    let user_id = match invitations.accept(&invitation, name, &hash).await {
        Ok(id) => id,
        Err(AcceptError::NotOpen) => return Err(AppError::NotAvailable("invitation used meanwhile")),
        Err(AcceptError::DuplicateEmail) => return Err(AppError::Gone("an account for this address exists")),
        Err(AcceptError::Database(error)) => return Err(error.into()),
    };
    session.sign_in(user_id).await?;
    tracing::info!(account_id = user_id, client = %client.0.0, "invitation used");
    Ok(see_other("/shares"))
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
