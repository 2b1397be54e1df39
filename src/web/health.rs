//! Health endpoints for load balancers and container runtimes.

use poem::{
    Response, handler,
    http::{StatusCode, header},
    web::Data,
};

use super::AppState;

/// The process is up and serving.
#[handler]
pub fn healthz() -> &'static str {
    "ok\n"
}

/// The process can do its work: the database and the file store answer within the configured
/// timeout (the store's probe is one HEAD of a key that cannot exist).
#[handler]
pub async fn readyz(state: Data<&AppState>) -> Response {
    let timeout = state.config.settings.db_timeout;
    let database = matches!(tokio::time::timeout(timeout, state.services.ready()).await, Ok(true));
    let store = state.services.parts().store.clone();
    let storage =
        database && matches!(tokio::time::timeout(timeout, crate::lifecycle::probe(&*store)).await, Ok(Ok(())));
    let (status, body) = match (database, storage) {
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n"),
        (true, false) => (StatusCode::SERVICE_UNAVAILABLE, "storage unavailable\n"),
        (true, true) => (StatusCode::OK, "ready\n"),
    };
    Response::builder().status(status).header(header::CONTENT_TYPE, "text/plain; charset=utf-8").body(body)
}
