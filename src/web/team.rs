//! The team page (admins only): invite senders by email, list the invitations still waiting
//! (`invitations` resends and cancels them), list, disable and enable accounts again. A disabled
//! sender's sessions end at once; their active shares keep working unless revoked.
//! Disabling, enabling and deleting ask first on a page of their own; every change leads back to
//! the team page with a notice, so a reload repeats nothing.

use askama::Template;
use poem::{
    Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Path, Query},
};
use serde::Deserialize;

use super::{
    Admin, AppError, AppState, Chrome, Context,
    auth::account_error,
    form::Form,
    middleware::{ClientAddr, SessionHandle},
    paths, render_with, see_other,
    tokens::TokenRow,
};
use crate::{
    accounts::{Team, User, invitations::PendingInvitation},
    i18n::{Lang, format::human_time},
    services::{SignInMethods, accounts::AccountError},
};

/// The team page and its changes (admins only).
pub fn routes(route: Route) -> Route {
    use super::{deletion, sso};
    route
        .at("/team", get(show))
        .at("/team/invite", post(invite))
        .at("/team/:id/disable", get(confirm_disable).post(disable))
        .at("/team/:id/enable", get(confirm_enable).post(enable))
        .at("/team/:id/delete", get(confirm_delete).post(deletion::delete_member))
        .at("/team/:id/reset-factors", get(confirm_reset_factors).post(reset_factors))
        .at("/team/sign-in-policy", post(set_sign_in_policy))
        .at("/team/sign-in-methods", post(sso::set_methods))
        .at("/team/tokens/:id/revoke", post(super::tokens::revoke_as_admin))
}

#[derive(Template)]
#[template(path = "admin/team.html")]
struct TeamPage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    team: Team,
    /// The invitations whose links still work.
    invitations: Vec<PendingInvitation>,
    me: i64,
    /// What the change that led here came to.
    notice: Option<String>,
    error: Option<&'static str>,
    /// Every sign-in needs a second factor (the team's policy).
    require_second_factor: bool,
    /// The single sign-on switch (its own partial).
    sign_in: SignInMethods,
    /// Every member's API tokens.
    tokens: Vec<TokenRow>,
}

impl TeamPage<'_> {
    /// The member's role in the reader's language.
    fn role_text(&self, member: &User) -> &'static str {
        if member.is_admin() { self.c.t.admin.role_admin } else { self.c.t.admin.role_sender }
    }

    /// Until when an invitation's link works, in the admin's words and zone.
    fn expires_text(&self, invitation: &PendingInvitation) -> String {
        self.c.t.admin.invitation_expires.replace("{time}", &human_time(invitation.expires_at, self.c.reader()))
    }
}

/// The team page as `me` (an admin) sees it; with an error, a 400 that says what was refused.
async fn team_page(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    me: &User,
    notice: Option<String>,
    error: Option<&'static str>,
) -> Result<Response, AppError> {
    let team = state.services.accounts.team().await?;
    let invitations = state.services.accounts.pending_invitations().await?;
    let csrf_token = session.form_token();
    let require_second_factor = state.services.factors.policy().await?.require_second_factor;
    let sign_in = state.services.sign_in_methods().await?;
    let tokens = state.services.tokens.list_all().await?.into_iter().map(|e| TokenRow::of(&c, e)).collect();
    let page = TeamPage {
        c,
        csrf_token: &csrf_token,
        team,
        invitations,
        me: me.id,
        notice,
        error,
        require_second_factor,
        sign_in,
        tokens,
    };
    render_with(if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK }, &page)
}

#[derive(Deserialize)]
pub struct TeamQuery {
    /// The change that led here (`invited`, `disabled`), for its notice.
    done: Option<String>,
    /// The invitation the change was about, which the notice names.
    invitation: Option<i64>,
}

/// GET /team
#[handler]
pub async fn show(
    Context { c, state, session, .. }: Context<'_>,
    Query(query): Query<TeamQuery>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let a = &c.t.admin;
    let invited = match query.invitation {
        Some(id) => state.services.accounts.pending_invitations().await?.into_iter().find(|i| i.id == id),
        None => None,
    };
    let naming = |words: &str| invited.as_ref().map(|i| words.replace("{email}", &i.email));
    let notice = match query.done.as_deref() {
        Some("invited") => Some(naming(a.team_invited_to).unwrap_or_else(|| a.team_invited.to_owned())),
        Some("resent") => Some(naming(a.invitation_resent).unwrap_or_else(|| a.team_invited.to_owned())),
        Some("cancelled") => Some(a.invitation_cancelled.to_owned()),
        Some("disabled") => Some(a.disabled_notice.to_owned()),
        Some("enabled") => Some(a.enabled_notice.to_owned()),
        Some("policy") => Some(c.t.auth.second_factor.policy_saved.to_owned()),
        Some("factors-reset") => Some(c.t.auth.second_factor.reset_done.to_owned()),
        Some("sign-in-methods") => Some(c.t.auth.sso.policy_saved.to_owned()),
        Some("token-revoked") => Some(c.t.auth.tokens.revoked_notice.to_owned()),
        _ => None,
    };
    team_page(c, state, session, &user, notice, None).await
}

#[derive(Deserialize)]
pub struct InviteForm {
    #[serde(default)]
    email: String,
    /// The invitation mail's language (the page's when none is sent).
    #[serde(default)]
    lang: Option<String>,
}

/// POST /team/invite: creates the invitation and mails its link through the outbox, then leads to
/// the team page (303), whose reload sends nothing again.
#[handler]
pub async fn invite(
    Context { c, state, session, .. }: Context<'_>,
    Form(form): Form<InviteForm>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let t = c.t;
    let lang = form.lang.as_deref().and_then(Lang::from_code).unwrap_or(c.lang);
    let error = match state.services.accounts.invite(&user, &form.email, lang).await {
        Ok(id) => return Ok(see_other(&paths::team_invitation_done("invited", id))),
        Err(AccountError::Invalid(_)) => t.auth.email_invalid,
        Err(AccountError::Exists) => t.admin.team_exists,
        Err(error) => return Err(account_error(error)),
    };
    team_page(c, state, session, &user, None, Some(error)).await
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
    Ok(see_other(&paths::team_done("disabled")))
}

/// POST /team/{id}/enable: a disabled account can sign in again.
#[handler]
pub async fn enable(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    client: Data<&ClientAddr>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    if state.services.accounts.enable(&user, id, client.0.0).await? {
        return Ok(see_other(&paths::team_done("enabled")));
    }
    Ok(see_other(paths::TEAM))
}

#[derive(Template)]
#[template(path = "admin/team_confirm.html")]
struct ConfirmPage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    member: User,
    title: &'static str,
    /// What the change does, a paragraph each.
    lead: Vec<&'static str>,
    action: String,
    submit: &'static str,
    /// The change takes something away (a red card and button); enabling gives back.
    danger: bool,
}

/// The other member an admin is about to change; `None` for themselves or an unknown id.
async fn other_member(state: &AppState, me: &User, id: i64) -> Result<Option<User>, AppError> {
    Ok(other_in(&state.services.accounts.team().await?, me, id))
}

/// `id` in `team`, unless it is `me`.
fn other_in(team: &Team, me: &User, id: i64) -> Option<User> {
    team.members.iter().find(|member| member.id == id && member.id != me.id).cloned()
}

/// GET /team/{id}/disable: asks before disabling. One already disabled goes back to the team.
#[handler]
pub async fn confirm_disable(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let Some(member) = other_member(state, &user, id).await?.filter(|m| !m.disabled) else {
        return Ok(see_other(paths::TEAM));
    };
    let s = &c.t.admin;
    let words = (s.disable_confirm_title, vec![s.disable_confirm_lead], s.disable_confirm_submit);
    confirm_page(c, session, member, words, "disable")
}

/// GET /team/{id}/enable: asks before enabling a disabled account. One already active, or one a
/// deletion case has started on, goes back.
#[handler]
pub async fn confirm_enable(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let team = state.services.accounts.team().await?;
    let Some(member) = other_in(&team, &user, id).filter(|m| team.can_enable(m)) else {
        return Ok(see_other(paths::TEAM));
    };
    let s = &c.t.admin;
    let words = (s.enable_confirm_title, vec![s.enable_confirm_lead], s.enable_confirm_submit);
    confirm_page(c, session, member, words, "enable")
}

/// GET /team/{id}/delete: asks before opening a deletion case for another member.
#[handler]
pub async fn confirm_delete(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let Some(member) = other_member(state, &user, id).await? else { return Ok(see_other(paths::TEAM)) };
    let (s, d) = (&c.t.admin, &c.t.admin.deletion);
    let words = (s.delete_confirm_title, vec![d.team_hint, s.delete_confirm_lead], d.team_submit);
    confirm_page(c, session, member, words, "delete")
}

/// The page that asks before `change` (`disable`, `enable`, `delete`) is done to `member`: its
/// title, its paragraphs and the words of its button, posting to `/team/{id}/{change}`.
fn confirm_page(
    c: Chrome,
    session: &SessionHandle,
    member: User,
    (title, lead, submit): (&'static str, Vec<&'static str>, &'static str),
    change: &str,
) -> Result<Response, AppError> {
    let csrf_token = session.form_token();
    let action = paths::team_member(member.id, change);
    let danger = change != "enable";
    let page = ConfirmPage { c, csrf_token: &csrf_token, member, title, lead, action, submit, danger };
    render_with(StatusCode::OK, &page)
}

/// The team page with a refusal for the admin to read (400).
pub async fn page_with_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    me: &User,
    message: &'static str,
) -> Result<Response, AppError> {
    team_page(c, state, session, me, None, Some(message)).await
}

#[derive(Deserialize)]
pub struct PolicyForm {
    /// The checkbox: present when ticked.
    #[serde(default)]
    require_second_factor: Option<String>,
}

/// POST /team/sign-in-policy: whether every sign-in needs a second factor.
#[handler]
pub async fn set_sign_in_policy(
    Form(form): Form<PolicyForm>,
    state: Data<&AppState>,
    client: Data<&ClientAddr>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let on = form.require_second_factor.is_some();
    state.services.factors.require_second_factor(&user, on, client.0.0).await?;
    Ok(see_other(&paths::team_done("policy")))
}

/// GET /team/{id}/reset-factors: asks before resetting another member's second factors.
#[handler]
pub async fn confirm_reset_factors(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    let Some(member) = other_member(state, &user, id).await? else { return Ok(see_other(paths::TEAM)) };
    let s = &c.t.auth.second_factor;
    let words = (s.reset_title, vec![s.reset_lead], s.reset_submit);
    confirm_page(c, session, member, words, "reset-factors")
}

/// POST /team/{id}/reset-factors: removes the member's factors and ends all their sessions.
#[handler]
pub async fn reset_factors(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    client: Data<&ClientAddr>,
    Admin(user): Admin,
) -> Result<Response, AppError> {
    if let Some(member) = other_member(&state, &user, id).await? {
        state.services.factors.reset(&member, Some(&user), Some(client.0.0)).await?;
    }
    Ok(see_other(&paths::team_done("factors-reset")))
}
