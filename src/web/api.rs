//! The JSON API under `/api/v1`, for scripts and other systems that hold a personal API token.
//! A request proves itself with `Authorization: Bearer wts_…` alone: the session layer skips
//! these paths (no cookie is read or set) and so does the CSRF guard (a forged cross-site request
//! carries no token). So far it answers who the token acts for.

use poem::{IntoResponse, Request, Response, Route, get, handler, http::StatusCode, web::Json};
use serde_json::json;

use super::{AppState, middleware::ClientAddr};
use crate::{
    accounts::tokens::Scope,
    services::tokens::{TokenRefusal, TokenUser},
};

/// Where the API lives; the session and CSRF layers recognise it by this.
pub const API_PREFIX: &str = "/api/";

/// Whether `path` (app-relative) is the API's.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with(API_PREFIX)
}

pub fn routes(route: Route) -> Route {
    route.at("/api/v1/me", get(me))
}

/// Why the API refuses a request before its handler's work.
#[derive(Debug)]
pub enum ApiRefusal {
    /// The bearer token does not work (or could not be checked).
    Token(TokenRefusal),
    /// The token works but lacks this scope.
    Scope(Scope),
}

/// A refused bearer request as the API answers it: 401 with the challenge for every token that
/// does not work (which one it was is the log's business), 403 naming a missing scope (RFC 6750
/// section 3.1), 429 when over a limit, 503 or 500 when the check itself failed.
impl IntoResponse for ApiRefusal {
    fn into_response(self) -> Response {
        match self {
            Self::Scope(scope) => {
                let challenge = format!(r#"Bearer realm="watasu", error="insufficient_scope", scope="{scope}""#);
                problem(StatusCode::FORBIDDEN, &format!("this token lacks the scope {scope}"))
                    .with_header("WWW-Authenticate", challenge)
                    .into_response()
            }
            Self::Token(TokenRefusal::TooMany(wait)) => problem(StatusCode::TOO_MANY_REQUESTS, "too many requests")
                .with_header("Retry-After", wait.as_secs().max(1).to_string())
                .into_response(),
            Self::Token(TokenRefusal::Fault(fault)) => {
                let unavailable = matches!(fault, crate::services::Fault::Unavailable(_));
                tracing::error!(error = ?anyhow::Error::from(fault), "bearer check failed");
                let status =
                    if unavailable { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::INTERNAL_SERVER_ERROR };
                problem(status, "try again later").into_response()
            }
            Self::Token(_) => problem(StatusCode::UNAUTHORIZED, "a valid bearer token is required")
                .with_header("WWW-Authenticate", r#"Bearer realm="watasu""#)
                .into_response(),
        }
    }
}

/// A small JSON error body (the later API answers RFC 9457 problem details in full).
fn problem(status: StatusCode, detail: &str) -> impl IntoResponse + use<> {
    let body = json!({ "status": status.as_u16(), "detail": detail });
    (status, Json(body)).with_content_type("application/problem+json")
}

/// The caller of a bearer request, or why it is refused.
pub async fn caller(req: &Request) -> Result<TokenUser, ApiRefusal> {
    let Some(state) = req.data::<AppState>() else {
        let missing = crate::services::Fault::Internal(anyhow::anyhow!("no app state on the request"));
        return Err(ApiRefusal::Token(missing.into()));
    };
    let client = req.data::<ClientAddr>().map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0);
    let header = req.header(poem::http::header::AUTHORIZATION);
    state.services.tokens.authenticate(header, client).await.map_err(ApiRefusal::Token)
}

/// Refuses a caller whose token lacks `scope`.
pub fn require(caller: &TokenUser, scope: Scope) -> Result<(), ApiRefusal> {
    if caller.may(scope) { Ok(()) } else { Err(ApiRefusal::Scope(scope)) }
}

/// GET /api/v1/me: the token's owner and scopes (any scope will do).
#[handler]
pub async fn me(req: &Request) -> Response {
    let caller = match caller(req).await {
        Ok(caller) => caller,
        Err(refused) => return refused.into_response(),
    };
    let scopes: Vec<&str> = caller.scopes.iter().map(Scope::code).collect();
    Json(json!({ "email": caller.user.email, "scopes": scopes })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::{Role, User, tokens::Scopes};

    fn caller_with(scopes: &[&str]) -> TokenUser {
        let user = User {
            id: 1,
            email: "sato@example.test".into(),
            display_name: "Sato".into(),
            role: Role::Sender,
            lang: Default::default(),
            disabled: false,
        };
        TokenUser { user, scopes: Scopes::parse(scopes.iter().copied()).unwrap(), token_id: 1 }
    }

    #[test]
    fn a_token_without_the_scope_is_refused_with_403_naming_it() {
        let refused = require(&caller_with(&["shares:read"]), Scope::SharesWrite).unwrap_err().into_response();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let challenge = refused.headers().get("WWW-Authenticate").unwrap().to_str().unwrap();
        assert!(
            challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("shares:write"),
            "{challenge}"
        );
        assert!(require(&caller_with(&["shares:read", "shares:write"]), Scope::SharesWrite).is_ok());
    }

    #[test]
    fn only_paths_under_api_are_the_apis() {
        assert!(is_api_path("/api/v1/me"));
        assert!(!is_api_path("/apiary") && !is_api_path("/account/tokens"));
    }
}
