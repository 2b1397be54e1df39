//! Access log through tracing: a request id, method, path with secrets redacted, status, latency.

use std::{borrow::Cow, sync::Arc, time::Instant};

use poem::{Endpoint, IntoResponse, Request, Response};

use super::ClientAddr;
use crate::config::BasePath;

/// Identifies one request in the log and on a 5xx page, so a report can be matched to its cause.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// Paths whose next segment is a secret token.
const SECRET_SEGMENT_PREFIXES: [&str; 3] = ["/s/", "/invite/", "/setup/"];

/// Replaces the token in `/s/{token}/…` (and other token paths) with `[redacted]`, below the
/// base path (`/files/s/{token}`) as at the root.
pub fn redact_path<'a>(path: &'a str, base: &BasePath) -> Cow<'a, str> {
    let (base, app_path) = match path.strip_prefix(base.as_str()) {
        Some(rest) if rest.starts_with('/') => (base.as_str(), rest),
        _ => ("", path),
    };
    for prefix in SECRET_SEGMENT_PREFIXES {
        if let Some(rest) = app_path.strip_prefix(prefix) {
            let tail = rest.find('/').map(|i| &rest[i..]).unwrap_or("");
            return Cow::Owned(format!("{base}{prefix}[redacted]{tail}"));
        }
    }
    Cow::Borrowed(path)
}

pub async fn access_log<E: Endpoint>(ep: Arc<E>, mut req: Request, base: Arc<BasePath>) -> poem::Result<Response> {
    let started = Instant::now();
    let mut id_bytes = [0u8; 8];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut id_bytes);
    let request_id = hex::encode(id_bytes);
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let method = req.method().clone();
    // The query string is never logged: it may carry anything.
    let path = redact_path(req.uri().path(), &base).into_owned();
    let client = req.extensions().get::<ClientAddr>().map(|c| c.0.to_string()).unwrap_or_default();
    let mut response = match ep.call(req).await {
        Ok(response) => response.into_response(),
        Err(error) => error.into_response(),
    };
    response.headers_mut().insert("X-Request-Id", request_id.parse().expect("hex is a valid header"));
    tracing::info!(
        target: "watasu::access",
        request_id,
        %method,
        path,
        status = response.status().as_u16(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        client,
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::redact_path;
    use crate::config::BasePath;

    fn base(url: &str) -> BasePath {
        BasePath::from_url(&url::Url::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn tokens_in_paths_are_redacted() {
        let token = "a".repeat(64);
        let root = BasePath::default();
        assert_eq!(redact_path(&format!("/s/{token}"), &root), "/s/[redacted]");
        assert_eq!(redact_path(&format!("/s/{token}/code"), &root), "/s/[redacted]/code");
        assert_eq!(redact_path(&format!("/s/{token}/file"), &root), "/s/[redacted]/file");
        assert_eq!(redact_path("/invite/xyz", &root), "/invite/[redacted]");
        assert_eq!(redact_path("/shares/12", &root), "/shares/12");
    }

    #[test]
    fn tokens_below_the_base_path_are_redacted_even_when_the_base_path_looks_like_a_token_path() {
        let token = "a".repeat(64);
        let files = base("https://example.com/files/");
        assert_eq!(redact_path(&format!("/files/s/{token}/code"), &files), "/files/s/[redacted]/code");
        assert_eq!(redact_path("/files/setup/xyz", &files), "/files/setup/[redacted]");
        assert_eq!(redact_path("/files/shares/12", &files), "/files/shares/12");
        let s = base("https://example.com/s");
        assert_eq!(redact_path(&format!("/s/s/{token}"), &s), "/s/s/[redacted]");
        assert_eq!(redact_path("/s/shares", &s), "/s/shares");
    }
}
