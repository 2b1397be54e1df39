//! Attaches the browser's session (if any) to the request and writes the cookie when a handler
//! created or regenerated one. A malformed or unknown cookie is treated as no cookie. A mere visit
//! makes no session row: an anonymous form carries a signed double-submit token instead.

use std::sync::{Arc, Mutex};

use poem::{
    Endpoint, IntoResponse, Request, Response,
    web::cookie::{Cookie, CookieJar, SameSite},
};

use crate::{
    secret::random_token,
    services::browsers::Browsers,
    session::{NewSession, Session, csrf_tokens_match, is_token_shaped},
    web::{AppError, cookie_scope::CookieScope},
};

/// The session cookie's name (see `CookieScope::name` for the prefixes).
pub fn cookie_name(scope: &CookieScope) -> &'static str {
    scope.name("__Host-watasu", "__Secure-watasu", "watasu_session")
}

/// The cookie of an anonymous form: a random value whose HMAC the form carries as its CSRF token.
fn form_cookie_name(scope: &CookieScope) -> &'static str {
    scope.name("__Host-watasu-form", "__Secure-watasu-form", "watasu_form")
}

/// The cookie of a single sign-on under way: the sealed state the provider's answer is checked
/// against (see `sso::pending`), so that starting one stores nothing.
fn sso_cookie_name(scope: &CookieScope) -> &'static str {
    scope.name("__Host-watasu-sso", "__Secure-watasu-sso", "watasu_sso")
}

/// What the session layer needs to know, fixed at start-up.
#[derive(Clone)]
pub struct SessionSettings {
    pub sessions: Browsers,
    /// The cookies' names, `Secure` flag and `Path`.
    pub cookies: CookieScope,
    pub max_age: std::time::Duration,
    /// Key of the anonymous forms' tokens (derived from the instance secret).
    pub form_key: [u8; 32],
}

/// A handler's access to the session: read it, create it on demand, regenerate or end it.
#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<Mutex<Option<Session>>>,
    settings: SessionSettings,
    jar: CookieJar,
}

impl SessionHandle {
    /// The current session, if the browser has a live one.
    pub fn current(&self) -> Option<Session> {
        self.inner.lock().expect("session lock").clone()
    }

    /// The current session, starting one when there is none: only for what must be remembered
    /// (a code asked for, a sign-in), never for a mere page view.
    pub async fn ensure(&self) -> Result<Session, AppError> {
        if let Some(session) = self.current() {
            return Ok(session);
        }
        let created = self.settings.sessions.start().await?;
        Ok(self.adopt(created))
    }

    /// The CSRF token for the forms of this page: the session's, or without a session the HMAC of
    /// a random form cookie (set now if the browser has none), so that showing a form stores nothing.
    pub fn form_token(&self) -> String {
        if let Some(session) = self.current() {
            return session.csrf_secret;
        }
        let name = form_cookie_name(&self.settings.cookies);
        let nonce = match self.jar.get(name) {
            Some(cookie) if is_token_shaped(cookie.value_str()) => cookie.value_str().to_owned(),
            _ => {
                let nonce = random_token().expose().to_owned();
                let mut cookie = self.base_cookie(name, nonce.clone());
                cookie.set_max_age(FORM_COOKIE_MAX_AGE);
                self.jar.add(cookie);
                nonce
            }
        };
        anonymous_form_token(&self.settings.form_key, &nonce)
    }

    /// Whether `submitted` is this browser's CSRF token: its session's, or its anonymous form's.
    pub fn accepts_csrf_token(&self, submitted: &str) -> bool {
        if self.current().is_some_and(|session| csrf_tokens_match(&session.csrf_secret, submitted)) {
            return true;
        }
        match self.jar.get(form_cookie_name(&self.settings.cookies)) {
            Some(cookie) if is_token_shaped(cookie.value_str()) => {
                csrf_tokens_match(&anonymous_form_token(&self.settings.form_key, cookie.value_str()), submitted)
            }
            _ => false,
        }
    }

    /// Whether the browser sent any cookie of ours (its session's or an anonymous form's): a
    /// form posted without one comes from a browser that refuses cookies, or from a page shown
    /// before its cookies ran out.
    pub fn sent_cookies(&self) -> bool {
        let scope = &self.settings.cookies;
        self.jar.get(cookie_name(scope)).is_some() || self.jar.get(form_cookie_name(scope)).is_some()
    }

    /// Remembers a single sign-on under way in its own cookie, for `max_age`.
    pub fn set_pending_sso(&self, sealed: String, max_age: std::time::Duration) {
        let mut cookie = self.base_cookie(sso_cookie_name(&self.settings.cookies), sealed);
        cookie.set_max_age(max_age);
        self.jar.add(cookie);
    }

    /// The single sign-on under way: its cookie's value.
    pub fn pending_sso(&self) -> Option<String> {
        self.jar.get(sso_cookie_name(&self.settings.cookies)).map(|cookie| cookie.value_str().to_owned())
    }

    /// Clears the single sign-on's cookie: its answer came (an answer is taken once).
    pub fn end_pending_sso(&self) {
        let mut gone = self.base_cookie(sso_cookie_name(&self.settings.cookies), String::new());
        gone.set_max_age(std::time::Duration::ZERO);
        self.jar.add(gone);
    }

    /// Moves the session to a new id on a privilege change; the old cookie dies at once.
    pub async fn regenerate(&self) -> Result<Session, AppError> {
        let session = self.ensure().await?;
        match self.settings.sessions.regenerate(session.id).await? {
            Some(renewed) => Ok(self.adopt(renewed)),
            None => Err(AppError::Forbidden("session ended during regeneration")),
        }
    }

    /// Signs a sender in, with a new session id.
    pub async fn sign_in(&self, user_id: i64) -> Result<Session, AppError> {
        let session = self.ensure().await?;
        match self.settings.sessions.sign_in(session.id, user_id).await? {
            Some(renewed) => Ok(self.adopt(renewed)),
            None => Err(AppError::Forbidden("session ended during sign-in")),
        }
    }

    /// Ends the session and clears the cookie.
    pub async fn end(&self) -> Result<(), AppError> {
        let current = self.inner.lock().expect("session lock").take();
        if let Some(session) = current {
            self.settings.sessions.end(session.id).await?;
        }
        let mut cookie = self.base_cookie(cookie_name(&self.settings.cookies), String::new());
        cookie.set_max_age(std::time::Duration::ZERO);
        self.jar.add(cookie);
        Ok(())
    }

    /// Makes `new` this browser's session (a service signed it in or moved it to a new id).
    pub fn adopt(&self, new: NewSession) -> Session {
        self.jar.add(self.base_cookie(cookie_name(&self.settings.cookies), new.cookie_value.expose().to_owned()));
        *self.inner.lock().expect("session lock") = Some(new.session.clone());
        new.session
    }

    fn base_cookie(&self, name: &str, value: String) -> Cookie {
        let mut cookie = Cookie::new_with_str(name, value);
        self.settings.cookies.apply(&mut cookie, "/");
        cookie.set_http_only(true);
        cookie.set_same_site(SameSite::Lax);
        cookie.set_max_age(self.settings.max_age);
        cookie
    }
}

/// An anonymous form stays usable this long after it was shown.
const FORM_COOKIE_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

fn anonymous_form_token(key: &[u8; 32], nonce: &str) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(nonce.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

pub async fn load_session<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    settings: SessionSettings,
) -> poem::Result<Response> {
    // Probes must not depend on the session table: /healthz answers while the database is down.
    if matches!(req.uri().path(), "/healthz" | "/readyz") {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    // The API signs in with a bearer token alone: a browser's cookie there is ignored, and no
    // answer of it sets one.
    if crate::web::api::is_api_path(req.uri().path()) {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let jar = req.cookie().clone();
    let current = match jar.get(cookie_name(&settings.cookies)) {
        Some(cookie) => settings.sessions.load(cookie.value_str()).await.map_err(AppError::from)?,
        None => None,
    };
    let handle = SessionHandle { inner: Arc::new(Mutex::new(current)), settings, jar };
    req.extensions_mut().insert(handle);
    ep.call(req).await.map(IntoResponse::into_response)
}
