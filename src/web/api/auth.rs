//! The API's security scheme: `Authorization: Bearer wts_…`, checked by the token service, and
//! each operation's scope.

use poem::Request;
use poem_openapi::{SecurityScheme, auth::Bearer};

use super::problem::ApiError;
use crate::{
    accounts::tokens::Scope,
    services::tokens::TokenUser,
    web::{AppState, middleware::ClientAddr},
};

/// A personal API token (`wts_…`), made on the account page; each operation names the scope it
/// needs.
#[derive(SecurityScheme)]
#[oai(ty = "bearer", bearer_format = "wts_…", checker = "check")]
pub struct Token(pub TokenUser);

/// The token's owner, or the problem that refuses it (carried as a response, which the API's
/// error handler passes on as it is).
async fn check(req: &Request, _: Bearer) -> poem::Result<TokenUser> {
    let Some(state) = req.data::<AppState>() else {
        let missing = crate::services::Fault::Internal(anyhow::anyhow!("no app state on the request"));
        return Err(ApiError::from(missing).into());
    };
    let client = req.data::<ClientAddr>().map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0);
    let header = req.header(poem::http::header::AUTHORIZATION);
    state.services.tokens.authenticate(header, client).await.map_err(|refusal| ApiError::refused_token(refusal).into())
}

impl Token {
    /// The caller, if the token carries `scope`.
    pub fn with(&self, scope: Scope) -> Result<&TokenUser, ApiError> {
        if self.0.may(scope) { Ok(&self.0) } else { Err(ApiError::missing_scope(scope)) }
    }
}
