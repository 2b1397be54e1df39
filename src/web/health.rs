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

/// The process can do its work: the database answers within the configured timeout.
#[handler]
pub async fn readyz(state: Data<&AppState>) -> Response {
    let timeout = state.config.settings.db_timeout;
    let ready = matches!(tokio::time::timeout(timeout, state.services.ready()).await, Ok(true));
    let (status, body) =
        if ready { (StatusCode::OK, "ready\n") } else { (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n") };
    Response::builder().status(status).header(header::CONTENT_TYPE, "text/plain; charset=utf-8").body(body)
}
