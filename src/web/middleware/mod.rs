//! Middleware, outermost first: client address, access log, request metrics, cookies, security
//! headers, language, error pages, session, CSRF and body cap.

mod access_log;
mod after_response;
mod base_path;
mod client_addr;
mod csrf;
mod lang;
mod request_metrics;
mod security_headers;
mod session;

pub use access_log::{RequestId, access_log, redact_path};
pub use after_response::collect_after_response;
pub use base_path::prefix_redirects;
pub use client_addr::{ClientAddr, ClientIpHeader, TrustedProxies, client_addr};
pub use csrf::{FORM_BODY_LIMIT, csrf_guard};
pub use lang::choose_lang;
pub use request_metrics::request_metrics;
pub use security_headers::security_headers;
pub use session::{SessionHandle, SessionSettings, load_session};

/// True for requests HTMX made; they get fragments instead of whole pages.
pub fn is_htmx(req: &poem::Request) -> bool {
    req.header("HX-Request") == Some("true")
}
