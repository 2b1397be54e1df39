//! Attaches the browser's session (if any) to the request and writes the cookie when a handler
//! created or regenerated one. A malformed or unknown cookie is treated as no cookie.

use std::sync::{Arc, Mutex};

use poem::{
    Endpoint, IntoResponse, Request, Response,
    web::cookie::{Cookie, CookieJar, SameSite},
};

use crate::{
    session::{NewSession, Session, Sessions},
    web::AppError,
};

/// The cookie name: with TLS, `__Host-` makes the browser refuse it unless it is Secure, has
/// Path=/ and no Domain, so a sibling subdomain cannot plant one.
pub fn cookie_name(https: bool) -> &'static str {
    if https { "__Host-watasu" } else { "watasu_session" }
}

/// A handler's access to the session: read it, create it on demand, regenerate or end it.
#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<Mutex<Option<Session>>>,
    sessions: Sessions,
    jar: CookieJar,
    https: bool,
    max_age: std::time::Duration,
}

impl SessionHandle {
    /// The current session, if the browser has a live one.
    pub fn current(&self) -> Option<Session> {
        self.inner.lock().expect("session lock").clone()
    }

    /// The current session, starting one when there is none (every page with a form needs one).
    pub async fn ensure(&self) -> Result<Session, AppError> {
        if let Some(session) = self.current() {
            return Ok(session);
        }
        let created = self.sessions.create().await?;
        Ok(self.adopt(created))
    }

    /// Moves the session to a new id on a privilege change; the old cookie dies at once.
    pub async fn regenerate(&self) -> Result<Session, AppError> {
        let session = self.ensure().await?;
        match self.sessions.regenerate(session.id).await? {
            Some(renewed) => Ok(self.adopt(renewed)),
            None => Err(AppError::Forbidden("session ended during regeneration")),
        }
    }

    /// Signs a sender in, with a new session id.
    pub async fn sign_in(&self, user_id: i64) -> Result<Session, AppError> {
        let session = self.ensure().await?;
        match self.sessions.sign_in(session.id, user_id).await? {
            Some(renewed) => Ok(self.adopt(renewed)),
            None => Err(AppError::Forbidden("session ended during sign-in")),
        }
    }

    /// Ends the session and clears the cookie.
    pub async fn end(&self) -> Result<(), AppError> {
        let current = self.inner.lock().expect("session lock").take();
        if let Some(session) = current {
            self.sessions.end(session.id).await?;
        }
        let mut cookie = self.base_cookie(String::new());
        cookie.set_max_age(std::time::Duration::ZERO);
        self.jar.add(cookie);
        Ok(())
    }

    fn adopt(&self, new: NewSession) -> Session {
        self.jar.add(self.base_cookie(new.cookie_value.expose().to_owned()));
        *self.inner.lock().expect("session lock") = Some(new.session.clone());
        new.session
    }

    fn base_cookie(&self, value: String) -> Cookie {
        let mut cookie = Cookie::new_with_str(cookie_name(self.https), value);
        cookie.set_path("/");
        cookie.set_http_only(true);
        cookie.set_same_site(SameSite::Lax);
        cookie.set_secure(self.https);
        cookie.set_max_age(self.max_age);
        cookie
    }
}

pub async fn load_session<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    sessions: Sessions,
    https: bool,
    max_age: std::time::Duration,
) -> poem::Result<Response> {
    // Probes must not depend on the session table: /healthz answers while the database is down.
    if matches!(req.uri().path(), "/healthz" | "/readyz") {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let jar = req.cookie().clone();
    let current = match jar.get(cookie_name(https)) {
        Some(cookie) => sessions.load(cookie.value_str()).await.map_err(AppError::from)?,
        None => None,
    };
    let handle = SessionHandle { inner: Arc::new(Mutex::new(current)), sessions, jar, https, max_age };
    req.extensions_mut().insert(handle);
    ep.call(req).await.map(IntoResponse::into_response)
}
