//! A link shown to its sender once, across a redirect. watasu keeps only a hash of a link, so the
//! page a POST leads to (a new share's created page, the share page after a fresh link) gets it in
//! an encrypted cookie scoped to that page and kept for a few minutes: a reload shows the page
//! again without making another link, and once the cookie is gone the page says where the link is.

use std::time::Duration;

use poem::{
    Response,
    web::cookie::{Cookie, CookieJar, CookieKey, SameSite},
};

use crate::web::{AppState, cookie_scope::CookieScope, paths, see_other};

/// Long enough to copy the link after a slow page load, short enough not to linger.
const LINK_COOKIE_MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// The page a link is shown on after the redirect.
#[derive(Clone, Copy)]
pub(super) enum ShownOn {
    /// A new share's created page.
    Created,
    /// The share page, after "send a fresh link".
    SharePage,
}

impl ShownOn {
    fn cookie_name(self, state: &AppState) -> &'static str {
        match (self, state.config.is_https()) {
            (Self::Created, true) => "__Secure-watasu-created",
            (Self::Created, false) => "watasu_created",
            (Self::SharePage, true) => "__Secure-watasu-fresh-link",
            (Self::SharePage, false) => "watasu_fresh_link",
        }
    }

    /// The page the cookie is scoped to, and the redirect leads to.
    fn path(self, share_id: i64) -> String {
        match self {
            Self::Created => paths::share_created(share_id),
            Self::SharePage => paths::share(share_id),
        }
    }
}

fn cookie_key(state: &AppState) -> CookieKey {
    CookieKey::derive_from(&state.services.parts().secret_key.derive("watasu created link cookie v1"))
}

/// The answer to the POST that made `link`: a 303 to the page it is shown on, with the cookie.
/// `location` is that page, or that page with a query (its notice).
pub(super) fn lead_to(
    state: &AppState,
    jar: &CookieJar,
    shown_on: ShownOn,
    share_id: i64,
    link: &str,
    location: &str,
) -> Response {
    let mut cookie = Cookie::new_with_str(shown_on.cookie_name(state), format!("{share_id} {link}"));
    CookieScope::new(&state.config).apply(&mut cookie, &shown_on.path(share_id));
    cookie.set_http_only(true);
    cookie.set_same_site(SameSite::Strict);
    cookie.set_max_age(LINK_COOKIE_MAX_AGE);
    jar.private_with_key(&cookie_key(state)).add(cookie);
    see_other(location)
}

/// The link the cookie carries for this share, if it is still there and intact.
pub(super) fn link(state: &AppState, jar: &CookieJar, shown_on: ShownOn, share_id: i64) -> Option<String> {
    let cookie = jar.private_with_key(&cookie_key(state)).get(shown_on.cookie_name(state))?;
    let (id, link) = cookie.value_str().split_once(' ')?;
    (id == share_id.to_string()).then(|| link.to_owned())
}
