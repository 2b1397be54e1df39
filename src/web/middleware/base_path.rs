//! The edge of the base path: handlers redirect to app-relative paths (`/shares`); this layer,
//! just inside the router's nest, adds the base path (`/files/shares`) to every `Location` and
//! `HX-Redirect` on the way out, so no redirect can forget it.

use std::sync::Arc;

use poem::{Endpoint, IntoResponse, Request, Response, http::HeaderValue};

use crate::config::BasePath;

/// Response headers that carry a URL the browser follows.
const REDIRECT_HEADERS: [&str; 2] = ["Location", "HX-Redirect"];

pub async fn prefix_redirects<E: Endpoint>(ep: Arc<E>, req: Request, base: Arc<BasePath>) -> poem::Result<Response> {
    let mut response = ep.call(req).await?.into_response();
    for name in REDIRECT_HEADERS {
        let Some(value) = response.headers().get(name).and_then(|v| v.to_str().ok()) else { continue };
        // Only app-relative paths: an absolute URL (or `//host`) already says where it leads.
        if value.starts_with('/') && !value.starts_with("//") {
            let prefixed = base.join(value);
            response.headers_mut().insert(name, HeaderValue::from_str(&prefixed).expect("a path stays a header value"));
        }
    }
    Ok(response)
}
