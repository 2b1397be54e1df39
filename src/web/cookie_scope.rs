//! Where the app's cookies live: `Secure` with TLS, and scoped to the base path, so two apps on
//! one host (at `/a` and `/b`) never see each other's cookies.

use poem::web::cookie::Cookie;

use crate::config::{BasePath, Config};

/// The cookies' name prefix, `Secure` flag and `Path`, fixed at start-up.
#[derive(Clone, Debug)]
pub struct CookieScope {
    https: bool,
    base: BasePath,
}

impl CookieScope {
    pub fn new(config: &Config) -> Self {
        Self { https: config.is_https(), base: config.base_path.clone() }
    }

    /// A cookie's name. With TLS at the root, `__Host-` makes the browser refuse one that is not
    /// Secure, has another Path or any Domain, so a sibling subdomain cannot plant it. `__Host-`
    /// requires `Path=/`, so below a base path the name says `__Secure-` (Secure only) instead.
    pub fn name(&self, at_root: &'static str, below_base: &'static str, plain: &'static str) -> &'static str {
        match (self.https, self.base.is_root()) {
            (true, true) => at_root,
            (true, false) => below_base,
            (false, _) => plain,
        }
    }

    /// Scopes a cookie to an app-relative path (`/` for the whole app) and marks it Secure with TLS.
    pub fn apply(&self, cookie: &mut Cookie, app_path: &str) {
        let path = if app_path == "/" { self.base.cookie_path().to_owned() } else { self.base.join(app_path) };
        cookie.set_path(path);
        cookie.set_secure(self.https);
    }
}
