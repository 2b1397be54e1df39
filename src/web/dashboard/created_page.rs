//! The page a new share leads to. POST /shares/new answers 303 to GET /shares/{id}/created, so a
//! reload shows this page again instead of sending the file twice. watasu keeps only a hash of the
//! link, so the link travels to this page in an encrypted cookie scoped to it and kept for a few
//! minutes: the page shows the link while the cookie lives, and afterwards says where it is.

use std::time::Duration;

use askama::Template;
use poem::{
    Response, handler,
    web::{
        Data, Html, Path,
        cookie::{Cookie, CookieJar, CookieKey, SameSite},
    },
};

use super::{ShareRow, not_visible, row};
use crate::{
    share::sender::Viewer,
    web::{AppError, AppState, Chrome, SignedIn, cookie_scope::CookieScope, paths, render, see_other},
};

/// Long enough to copy the link after a slow page load, short enough not to linger.
const LINK_COOKIE_MAX_AGE: Duration = Duration::from_secs(10 * 60);

fn cookie_name(state: &AppState) -> &'static str {
    if state.config.is_https() { "__Secure-watasu-created" } else { "watasu_created" }
}

fn cookie_key(state: &AppState) -> CookieKey {
    CookieKey::derive_from(&state.services.parts().secret_key.derive("watasu created link cookie v1"))
}

/// The answer to a successful upload: to the created page, with the link for it to show.
pub(super) fn lead_to_created(state: &AppState, jar: &CookieJar, share_id: i64, link: &str) -> Response {
    let mut cookie = Cookie::new_with_str(cookie_name(state), format!("{share_id} {link}"));
    CookieScope::new(&state.config).apply(&mut cookie, &paths::share_created(share_id));
    cookie.set_http_only(true);
    cookie.set_same_site(SameSite::Strict);
    cookie.set_max_age(LINK_COOKIE_MAX_AGE);
    jar.private_with_key(&cookie_key(state)).add(cookie);
    see_other(&paths::share_created(share_id))
}

/// The link the cookie carries for this share, if it is still there and intact.
fn link_from_cookie(state: &AppState, jar: &CookieJar, share_id: i64) -> Option<String> {
    let cookie = jar.private_with_key(&cookie_key(state)).get(cookie_name(state))?;
    let (id, link) = cookie.value_str().split_once(' ')?;
    (id == share_id.to_string()).then(|| link.to_owned())
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
    let link = link_from_cookie(&state, jar, id);
    render(&CreatedPage { share: row(&c, share), c, link })
}
