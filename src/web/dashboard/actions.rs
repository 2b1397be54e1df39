//! What a sender does to a share: end it (after a confirmation page, so a stray click or a
//! reload never ends one), end its whole handover, unlock it, send a new link. Each change leads back to the share page
//! with a notice saying what it came to (a new link with the link, shown there once).

use askama::Template;
use poem::{
    IntoResponse, Response, handler,
    web::{Data, Path},
};

use super::{
    ShareRow,
    link_cookie::{self, ShownOn},
    not_visible, row,
};
use crate::{
    i18n::Lang,
    services::sharing::{Actor, Change, viewer},
    web::{AppError, AppState, Chrome, Context, SignedIn, paths, render, see_other},
};

/// `?done=` after every open share of a handover was ended.
const HANDOVER_ENDED: &str = "handover-ended";

/// `?done=` after a fresh link was sent.
pub(super) const RENEWED: &str = "renewed";

/// The notice for `?done=…` on the share page; anything else shows none.
pub(super) fn notice(lang: Lang, done: &str) -> Option<&'static str> {
    let s = &lang.text().dashboard;
    match done {
        "revoked" => Some(s.revoked_notice),
        "unlocked" => Some(s.unlocked_notice),
        "unchanged" => Some(s.not_applicable_notice),
        HANDOVER_ENDED => Some(s.handover.handover_ended),
        // Shown when the link itself no longer is (its cookie is gone).
        RENEWED => Some(s.fresh_link_gone),
        _ => None,
    }
}

/// Where a revoke or an unlock leads: back to the share, saying whether it changed anything.
fn back_to_share(change: Change, id: i64, done: &str) -> Result<Response, AppError> {
    match change {
        Change::NotVisible => Err(not_visible()),
        Change::Done(()) => Ok(see_other(&paths::share_done(id, done))),
        // Neither a revoke nor an unlock is rate-limited, so `TooSoon` does not happen here.
        Change::NotApplicable | Change::TooSoon(_) => Ok(see_other(&paths::share_done(id, "unchanged"))),
    }
}

#[derive(Template)]
#[template(path = "dashboard/revoke_confirm.html")]
struct RevokeConfirmPage<'a> {
    c: Chrome,
    share: ShareRow,
    csrf_token: &'a str,
}

/// GET /shares/{id}/revoke: asks before ending the share. One that can no longer be ended goes
/// back to its page, which says so.
#[handler]
pub async fn revoke_confirm(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let share = state.services.sharing.summary(viewer(&user), id).await?.ok_or_else(not_visible)?;
    if !share.status.can_be_ended() {
        return Ok(see_other(&paths::share_done(id, "unchanged")));
    }
    let share = row(&c, share);
    let csrf_token = session.form_token();
    Ok(render(&RevokeConfirmPage { c, share, csrf_token: &csrf_token })?.into_response())
}

/// POST /shares/{id}/revoke: ends an active share at once; the GC then deletes its file.
#[handler]
pub async fn revoke(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    back_to_share(state.services.sharing.revoke(Actor::Sender(viewer(&user)), id).await?, id, "revoked")
}

/// POST /shares/{id}/end-handover: ends every open share of the handover share `id` belongs to
/// (a sender's own; an admin's, any), each as one revoke ends it.
#[handler]
pub async fn revoke_handover(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    match state.services.sharing.revoke_handover(viewer(&user), id).await? {
        Change::NotVisible => Err(not_visible()),
        Change::Done(_) => Ok(see_other(&paths::share_done(id, HANDOVER_ENDED))),
        Change::NotApplicable | Change::TooSoon(_) => Ok(see_other(&paths::share_done(id, "unchanged"))),
    }
}

/// POST /shares/{id}/link: a new link for the recipient (the old one dies), mailed, and shown once
/// on the share page this leads to, so a reload shows the page again instead of making another.
#[handler]
pub async fn renew_link(
    Context { state, req, .. }: Context<'_>,
    Path(id): Path<i64>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let link = match state.services.sharing.renew_link(&user, id).await? {
        Change::Done(link) => link,
        Change::NotVisible => return Err(not_visible()),
        Change::TooSoon(retry_after) => return Err(AppError::TooMany { reason: "link renewals", retry_after }),
        Change::NotApplicable => return Err(AppError::Gone("the share is no longer active")),
    };
    let location = paths::share_done(id, RENEWED);
    Ok(link_cookie::lead_to(state, req.cookie(), ShownOn::SharePage, &[(id, &link)], &location))
}

/// POST /shares/{id}/unlock: accepts codes again after too many wrong ones.
#[handler]
pub async fn unlock(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    back_to_share(state.services.sharing.unlock(viewer(&user), id).await?, id, "unlocked")
}
