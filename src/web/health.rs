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
/// writes again after its disk was found full. With the virus scan on, a second line says how
/// many files wait for clamd's verdict: a backlog is no reason to stop taking traffic (the
/// files are held, not lost), but it is what an operator looks for when clamd is down.
#[handler]
pub async fn readyz(state: Data<&AppState>) -> Response {
    let timeout = state.config.settings.db_timeout;
    let database =
        tokio::time::timeout(timeout, state.services.readiness.database()).await.unwrap_or(DatabaseState::Unavailable);
    let store = state.services.parts().store.clone();
    let storage = database == DatabaseState::Ready
        && matches!(tokio::time::timeout(timeout, crate::storage::probe(&*store)).await, Ok(Ok(())));
    let (status, mut body) = match (database, storage) {
        (DatabaseState::Unavailable, _) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n".to_owned()),
        (DatabaseState::Full, _) => (StatusCode::SERVICE_UNAVAILABLE, "database full\n".to_owned()),
        (DatabaseState::Ready, false) => (StatusCode::SERVICE_UNAVAILABLE, "storage unavailable\n".to_owned()),
        (DatabaseState::Ready, true) => (StatusCode::OK, "ready\n".to_owned()),
    };
    let scanning = &state.services.scanning;
    if database == DatabaseState::Ready && scanning.is_on() {
        match tokio::time::timeout(timeout, scanning.backlog()).await {
            Ok(Ok(held)) => body.push_str(&format!("scan backlog: {held}\n")),
            _ => body.push_str("scan backlog: unknown\n"),
        }
    }
    Response::builder().status(status).header(header::CONTENT_TYPE, "text/plain; charset=utf-8").body(body)
}
