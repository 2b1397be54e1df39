//! RFC 9457 problem details: every refusal of the API, the operations' own and the ones
//! poem-openapi makes while it parses a request, answers `application/problem+json`.

use poem::{Endpoint, IntoResponse, Request, Response, http::StatusCode};
use poem_openapi::{ApiResponse, Object, payload::Json};

use crate::services::{Fault, tokens::TokenRefusal};

/// What went wrong, as RFC 9457 describes it.
#[derive(Clone, Debug, Object)]
pub struct Problem {
    /// A URI naming the kind of problem; `about:blank` when the status says it all.
    #[oai(rename = "type")]
    pub kind: String,
    /// The status's short phrase.
    pub title: String,
    pub status: u16,
    /// What happened and what the caller can do next.
    pub detail: String,
}

/// Every refusal an operation may answer; each is documented on every operation, so a client
/// reads one shape whatever went wrong.
#[derive(Debug, ApiResponse)]
pub enum ApiError {
    /// The request could not be read.
    #[oai(status = 400, content_type = "application/problem+json")]
    BadRequest(Json<Problem>),
    /// No working bearer token.
    #[oai(status = 401, content_type = "application/problem+json")]
    Unauthorized(Json<Problem>, #[oai(header = "WWW-Authenticate")] String),
    /// The token lacks the operation's scope.
    #[oai(status = 403, content_type = "application/problem+json")]
    Forbidden(Json<Problem>, #[oai(header = "WWW-Authenticate")] String),
    /// Not there, or not the caller's.
    #[oai(status = 404, content_type = "application/problem+json")]
    NotFound(Json<Problem>),
    /// The share or request is no longer in a state the operation needs.
    #[oai(status = 409, content_type = "application/problem+json")]
    Conflict(Json<Problem>),
    /// Gone for good.
    #[oai(status = 410, content_type = "application/problem+json")]
    Gone(Json<Problem>),
    /// Larger than a limit allows.
    #[oai(status = 413, content_type = "application/problem+json")]
    TooLarge(Json<Problem>),
    /// A body in a type the operation does not take.
    #[oai(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(Json<Problem>),
    /// Read, but its values are refused.
    #[oai(status = 422, content_type = "application/problem+json")]
    Unprocessable(Json<Problem>),
    /// Over a limit; try again after `Retry-After` seconds.
    #[oai(status = 429, content_type = "application/problem+json")]
    TooMany(Json<Problem>, #[oai(header = "Retry-After")] u64),
    /// Something failed on the server (its log holds the cause).
    #[oai(status = 500, content_type = "application/problem+json")]
    Internal(Json<Problem>),
    /// The database or the file store does not answer now; try again later.
    #[oai(status = 503, content_type = "application/problem+json")]
    Unavailable(Json<Problem>),
}

fn body(status: StatusCode, detail: impl Into<String>) -> Json<Problem> {
    Json(Problem {
        kind: "about:blank".into(),
        title: status.canonical_reason().unwrap_or("Error").into(),
        status: status.as_u16(),
        detail: detail.into(),
    })
}

impl ApiError {
    /// The problem for `status` (one of those above; any other is answered as a 400 or 500).
    pub fn of(status: StatusCode, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let challenge = || r#"Bearer realm="watasu""#.to_owned();
        match status.as_u16() {
            401 => Self::Unauthorized(body(status, detail), challenge()),
            403 => Self::Forbidden(body(status, detail), challenge()),
            404 => Self::NotFound(body(status, detail)),
            409 => Self::Conflict(body(status, detail)),
            410 => Self::Gone(body(status, detail)),
            413 => Self::TooLarge(body(status, detail)),
            415 => Self::UnsupportedMediaType(body(status, detail)),
            422 => Self::Unprocessable(body(status, detail)),
            429 => Self::TooMany(body(status, detail), 1),
            503 => Self::Unavailable(body(status, detail)),
            code if code >= 500 => Self::Internal(body(StatusCode::INTERNAL_SERVER_ERROR, "try again later")),
            _ => Self::BadRequest(body(StatusCode::BAD_REQUEST, detail)),
        }
    }

    pub fn not_found() -> Self {
        Self::of(StatusCode::NOT_FOUND, "there is none of that id among yours")
    }

    pub fn conflict(detail: &str) -> Self {
        Self::of(StatusCode::CONFLICT, detail)
    }

    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::of(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// Over a limit: the problem with `Retry-After` (whole seconds, at least one).
    pub fn too_many(detail: &str, wait: std::time::Duration) -> Self {
        Self::TooMany(body(StatusCode::TOO_MANY_REQUESTS, detail), wait.as_secs().max(1))
    }

    /// A token that does not work: one answer for all of them (which one it was is the log's
    /// business), except a limit or a failed check.
    pub fn refused_token(refusal: TokenRefusal) -> Self {
        match refusal {
            TokenRefusal::TooMany(wait) => Self::too_many("too many requests", wait),
            TokenRefusal::Fault(fault) => fault.into(),
            _ => Self::of(StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
        }
    }

    /// The token lacks `scope` (RFC 6750 section 3.1).
    pub fn missing_scope(scope: crate::accounts::tokens::Scope) -> Self {
        let challenge = format!(r#"Bearer realm="watasu", error="insufficient_scope", scope="{scope}""#);
        Self::Forbidden(body(StatusCode::FORBIDDEN, format!("this token lacks the scope {scope}")), challenge)
    }
}

impl From<Fault> for ApiError {
    fn from(fault: Fault) -> Self {
        let unavailable = matches!(fault, Fault::Unavailable(_) | Fault::StorageUnavailable(_));
        tracing::error!(error = ?anyhow::Error::from(fault), "an API request failed");
        if unavailable {
            Self::of(StatusCode::SERVICE_UNAVAILABLE, "try again later")
        } else {
            Self::of(StatusCode::INTERNAL_SERVER_ERROR, "try again later")
        }
    }
}

/// The API's own error handler: an error that is already one of ours (a response) is passed on;
/// any other, such as poem-openapi's parse errors, an unknown path or method, becomes the
/// problem of its status, saying what could not be read. Never a 5xx for bad input: only a
/// 5xx that was one already stays one.
pub async fn problems<E: Endpoint>(ep: std::sync::Arc<E>, req: Request) -> poem::Result<Response> {
    match ep.call(req).await {
        Ok(response) => Ok(response.into_response()),
        Err(error) if error.is_from_response() => Ok(error.into_response()),
        Err(error) => {
            let status = error.status();
            if status.is_server_error() {
                tracing::error!(error = %error, "an API request failed");
            }
            let status = if status.is_success() { StatusCode::BAD_REQUEST } else { status };
            Ok(ApiError::of(status, error.to_string()).into_response())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_without_its_own_problem_is_answered_as_a_bad_request() {
        let problem = ApiError::of(StatusCode::METHOD_NOT_ALLOWED, "no").into_response();
        assert_eq!(problem.status(), StatusCode::BAD_REQUEST);
        assert_eq!(problem.content_type(), Some("application/problem+json"));
        let hidden = ApiError::of(StatusCode::BAD_GATEWAY, "database text").into_response();
        assert_eq!(hidden.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
