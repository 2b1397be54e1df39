//! The JSON API under `/api/v1`, for scripts and other systems that hold a personal API token.
//! A request proves itself with `Authorization: Bearer wts_…` alone: the session layer skips
//! these paths (no cookie is read or set) and so does the CSRF guard (a forged cross-site request
//! carries no token). Its operations and its OpenAPI document come from the same types.

mod auth;
mod binary;
mod cursor;
pub mod document;
mod fields;
mod handovers;
mod multipart;
pub mod problem;
mod reference;
mod requests;
mod views;
mod webhooks;

use poem::{EndpointExt, Response, Route, get, handler, http::StatusCode, web::Data};
use poem_openapi::{OpenApi, OpenApiService, Tags, payload::Json};

use super::AppState;
use crate::{accounts::tokens::Scope, config::Config};

/// Where the API lives; the session and CSRF layers recognise it by this.
pub const API_PREFIX: &str = "/api/";

/// The API's version 1, below the app's base path.
const V1: &str = "/api/v1";

/// Whether `path` (app-relative) is the API's.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with(API_PREFIX)
}

/// The document's groups of operations.
#[derive(Tags)]
enum ApiTags {
    /// Who the token acts for.
    Account,
    /// Files and notes handed to recipients, and their shares.
    Handovers,
    /// Files asked of someone, and what arrived.
    Requests,
    /// Endpoints that hear about shares, signed after Standard Webhooks.
    Webhooks,
}

struct AccountApi;

#[OpenApi(tag = "ApiTags::Account")]
impl AccountApi {
    /// The token's owner and scopes.
    ///
    /// Any scope will do.
    #[oai(path = "/me", method = "get")]
    async fn me(&self, token: auth::Token) -> Result<Json<views::Me>, problem::ApiError> {
        let scopes = token.0.scopes.iter().map(|scope: Scope| scope.code().to_owned()).collect();
        Ok(Json(views::Me { email: token.0.user.email.clone(), scopes }))
    }
}

/// Every operation of version 1.
type Operations = (AccountApi, handovers::HandoverApi, requests::RequestApi, webhooks::WebhookApi);

/// Every operation of version 1, served below [`V1`].
fn service(config: &Config) -> OpenApiService<Operations, ()> {
    let operations = (AccountApi, handovers::HandoverApi, requests::RequestApi, webhooks::WebhookApi);
    OpenApiService::new(operations, "watasu", env!("CARGO_PKG_VERSION"))
        .description("Hand files to people safely: the sender's handovers, file requests and webhooks, for scripts.")
        .server(config.url_for(V1))
}

pub fn routes(route: Route, config: &Config) -> Route {
    route
        .at(format!("{V1}/openapi.json"), get(openapi_json))
        .at(format!("{V1}/docs"), get(reference::reference))
        .nest(V1, service(config).around(problem::problems))
}

/// The document upgraded to OpenAPI 3.1 (see [`document`]).
pub fn openapi_document(config: &Config) -> serde_json::Value {
    let spec: serde_json::Value = serde_json::from_str(&service(config).spec()).unwrap_or_default();
    document::upgrade(spec)
}

/// GET /api/v1/openapi.json
#[handler]
async fn openapi_json(state: Data<&AppState>) -> Response {
    let body = serde_json::to_vec(&openapi_document(&state.config)).unwrap_or_default();
    Response::builder().status(StatusCode::OK).content_type("application/json").body(body)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_under_api_are_the_apis() {
        assert!(is_api_path("/api/v1/me"));
        assert!(!is_api_path("/apiary") && !is_api_path("/account/tokens"));
    }
}
