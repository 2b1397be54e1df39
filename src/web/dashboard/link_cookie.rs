//! Links shown to their sender once, across a redirect. watasu keeps only a hash of a link, so the
//! page a POST leads to (a new handover's created page, the share page after a fresh link) gets
//! them in an encrypted cookie scoped to that page and kept for a few minutes: a reload shows the
//! page again without making other links, and once the cookie is gone the page says where they
//! are. The cookie holds each share's id with its link (a handover's 20 links fit in it).

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
    CookieKey::derive_from(&state.services.parts().secret_key.derive(crate::secret::Purpose::CreatedLinkCookie))
}

/// The answer to the POST that made `links` (each with its share's id, the first one's page the
/// one they are shown on): a 303 to that page, with the cookie. `location` is that page, or that
/// page with a query (its notice).
pub(super) fn lead_to(
    state: &AppState,
    jar: &CookieJar,
    shown_on: ShownOn,
    links: &[(i64, &str)],
    location: &str,
) -> Response {
    let Some((share_id, _)) = links.first() else { return see_other(location) };
    let value: Vec<String> = links.iter().map(|(id, link)| format!("{id} {link}")).collect();
    let mut cookie = Cookie::new_with_str(shown_on.cookie_name(state), value.join(" "));
    CookieScope::new(&state.config).apply(&mut cookie, &shown_on.path(*share_id));
    cookie.set_http_only(true);
    cookie.set_same_site(SameSite::Strict);
    cookie.set_max_age(LINK_COOKIE_MAX_AGE);
    jar.private_with_key(&cookie_key(state)).add(cookie);
    see_other(location)
}

/// The links the cookie carries for the page of share `share_id`, each with its share's id, if
/// it is still there and intact; empty otherwise.
pub(super) fn links(state: &AppState, jar: &CookieJar, shown_on: ShownOn, share_id: i64) -> Vec<(i64, String)> {
    let Some(cookie) = jar.private_with_key(&cookie_key(state)).get(shown_on.cookie_name(state)) else {
        return Vec::new();
    };
    let words: Vec<&str> = cookie.value_str().split(' ').collect();
    let links: Vec<(i64, String)> =
        words.chunks_exact(2).filter_map(|pair| Some((pair[0].parse().ok()?, pair[1].to_owned()))).collect();
    if links.first().map(|(id, _)| *id) == Some(share_id) { links } else { Vec::new() }
}

/// The link the cookie carries for this share, if it is still there and intact.
pub(super) fn link(state: &AppState, jar: &CookieJar, shown_on: ShownOn, share_id: i64) -> Option<String> {
    links(state, jar, shown_on, share_id).into_iter().next().map(|(_, link)| link)
}
