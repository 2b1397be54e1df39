//! The page a new share leads to. POST /shares/new answers 303 to GET /shares/{id}/created, so a
//! reload shows this page again instead of sending the file twice; the link travels in a
//! `link_cookie`, shown while it lives, and afterwards the page says where the link is.

use askama::Template;
use poem::{
    Response, handler,
    web::{Data, Html, Path, cookie::CookieJar},
};

use super::{
    ShareRow,
    link_cookie::{self, ShownOn},
    not_visible, row,
};
use crate::{
    share::sender::Viewer,
    web::{AppError, AppState, Chrome, SignedIn, paths, render},
};

/// The answer to a successful upload: to the created page, with the link for it to show.
pub(super) fn lead_to_created(state: &AppState, jar: &CookieJar, share_id: i64, link: &str) -> Response {
    link_cookie::lead_to(state, jar, ShownOn::Created, share_id, link, &paths::share_created(share_id))
}

#[derive(Template)]
#[template(path = "dashboard/created.html")]
struct CreatedPage {
    c: Chrome,
    share: ShareRow,
    link: Option<String>,
}

/// GET /shares/{id}/created: only for the share's own sender (an admin sees the share page).
#[handler]
pub async fn created(
    c: Chrome,
    Path(id): Path<i64>,
    jar: &CookieJar,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let own = Viewer { user_id: user.id, is_admin: false };
    let share = state.services.sharing.summary(own, id).await?.ok_or_else(not_visible)?;
    let link = link_cookie::link(&state, jar, ShownOn::Created, id);
    render(&CreatedPage { share: row(&c, share), c, link })
}
