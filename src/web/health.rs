//! Health endpoints for load balancers and container runtimes.

use poem::{
    Response, handler,
    http::{StatusCode, header},
    web::Data,
};

use super::AppState;
use crate::services::readiness::DatabaseState;

/// The process is up and serving.
#[handler]
pub fn healthz() -> &'static str {
    "ok\n"
}

/// The process can do its work: the database and the file store answer within the configured
/// timeout (the store's probe is one HEAD of a key that cannot exist), and the database takes
/// writes again after its disk was found full.
#[handler]
pub async fn readyz(state: Data<&AppState>) -> Response {
    let timeout = state.config.settings.db_timeout;
    let database =
        tokio::time::timeout(timeout, state.services.readiness.database()).await.unwrap_or(DatabaseState::Unavailable);
    let store = state.services.parts().store.clone();
    let storage = database == DatabaseState::Ready
        && matches!(tokio::time::timeout(timeout, crate::storage::probe(&*store)).await, Ok(Ok(())));
    let (status, body) = match (database, storage) {
        (DatabaseState::Unavailable, _) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n"),
        (DatabaseState::Full, _) => (StatusCode::SERVICE_UNAVAILABLE, "database full\n"),
        (DatabaseState::Ready, false) => (StatusCode::SERVICE_UNAVAILABLE, "storage unavailable\n"),
        (DatabaseState::Ready, true) => (StatusCode::OK, "ready\n"),
    };
    Response::builder().status(status).header(header::CONTENT_TYPE, "text/plain; charset=utf-8").body(body)
}
