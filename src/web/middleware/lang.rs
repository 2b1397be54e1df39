//! Chooses the page language: `?lang=` (the visible switch, remembered in a cookie), then that
//! cookie, then Accept-Language.

use std::sync::Arc;

use poem::{
    Endpoint, IntoResponse, Request, Response,
    web::cookie::{Cookie, SameSite},
};

use crate::{i18n::Lang, web::cookie_scope::CookieScope};

/// The remembered choice (see `CookieScope::name` for the prefixes).
fn lang_cookie(scope: &CookieScope) -> &'static str {
    scope.name("__Host-lang", "__Secure-lang", "lang")
}

/// The language of a request, before any cookie is written.
fn request_lang(req: &Request, scope: &CookieScope) -> (Lang, bool) {
    let from_query = req
        .uri()
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "lang"))
        .and_then(|(_, v)| Lang::from_code(&v));
    if let Some(lang) = from_query {
        return (lang, true);
    }
    let from_cookie = req.cookie().get(lang_cookie(scope)).and_then(|c| Lang::from_code(c.value_str()));
    (from_cookie.unwrap_or_else(|| Lang::negotiate(req.header("accept-language"))), false)
}

pub async fn choose_lang<E: Endpoint>(ep: Arc<E>, mut req: Request, scope: Arc<CookieScope>) -> poem::Result<Response> {
    let (lang, chosen_now) = request_lang(&req, &scope);
    if chosen_now {
        let mut cookie = Cookie::new_with_str(lang_cookie(&scope), lang.code());
        scope.apply(&mut cookie, "/");
        cookie.set_same_site(SameSite::Lax);
        cookie.set_max_age(std::time::Duration::from_secs(365 * 86_400));
        req.cookie().add(cookie);
    }
    req.extensions_mut().insert(lang);
    let mut response = ep.call(req).await?.into_response();
    response.headers_mut().append("Vary", "Accept-Language, Cookie".parse().expect("static header"));
    Ok(response)
}
