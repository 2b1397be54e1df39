//! Safe defaults on every response, error pages included (DESIGN.md invariant 12).

use std::sync::Arc;

use poem::{
    Endpoint, IntoResponse, Request, Response,
    http::{HeaderValue, header},
};

/// No inline script or style and no eval: HTMX is loaded from our origin and configured for this.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; \
     frame-ancestors 'none'";

pub async fn security_headers<E: Endpoint>(ep: Arc<E>, req: Request, https: bool) -> poem::Result<Response> {
    let mut response = ep.call(req).await?.into_response();
    let headers = response.headers_mut();
    // A handler may set a stricter policy of its own (downloads use `sandbox`).
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Share links carry their token in the URL: never hand it to another site.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert("Cross-Origin-Opener-Policy", HeaderValue::from_static("same-origin"));
    headers.insert("Permissions-Policy", HeaderValue::from_static("camera=(), microphone=(), geolocation=()"));
    // Pages are personal (sessions, shares): nothing is cached unless a handler says otherwise.
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if https {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000"));
    }
    Ok(response)
}
