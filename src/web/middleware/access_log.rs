//! Access log through tracing: a request id, method, path with secrets redacted, status, latency.

use std::{borrow::Cow, sync::Arc, time::Instant};

use poem::{Endpoint, IntoResponse, Request, Response};

use super::ClientAddr;

/// Identifies one request in the log and on a 5xx page, so a report can be matched to its cause.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// Paths whose next segment is a secret token.
const SECRET_SEGMENT_PREFIXES: [&str; 3] = ["/s/", "/invite/", "/setup/"];

/// Replaces the token in `/s/{token}/…` (and other token paths) with `[redacted]`.
pub fn redact_path(path: &str) -> Cow<'_, str> {
    for prefix in SECRET_SEGMENT_PREFIXES {
        if let Some(rest) = path.strip_prefix(prefix) {
            let tail = rest.find('/').map(|i| &rest[i..]).unwrap_or("");
            return Cow::Owned(format!("{prefix}[redacted]{tail}"));
        }
    }
    Cow::Borrowed(path)
}

pub async fn access_log<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let started = Instant::now();
    let mut id_bytes = [0u8; 8];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut id_bytes);
    let request_id = hex::encode(id_bytes);
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let method = req.method().clone();
    // The query string is never logged: it may carry anything.
    let path = redact_path(req.uri().path()).into_owned();
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

    #[test]
    fn tokens_in_paths_are_redacted() {
        let token = "a".repeat(64);
        assert_eq!(redact_path(&format!("/s/{token}")), "/s/[redacted]");
        assert_eq!(redact_path(&format!("/s/{token}/code")), "/s/[redacted]/code");
        assert_eq!(redact_path(&format!("/s/{token}/file")), "/s/[redacted]/file");
        assert_eq!(redact_path("/invite/xyz"), "/invite/[redacted]");
        assert_eq!(redact_path("/shares/12"), "/shares/12");
    }
}
