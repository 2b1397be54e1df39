//! `GET /metrics`, the Prometheus text format, for a scraper holding `WATASU_METRICS_TOKEN` as
//! its bearer token. Without a configured token the route does not exist (404). Answers are
//! plain text, never a page, and start no session.

use poem::{
    Request, Response, handler,
    http::{StatusCode, header},
    web::Data,
};

use super::{AppState, bearer::bearer_matches};
use crate::metrics::CONTENT_TYPE;

/// GET /metrics
#[handler]
pub async fn scrape(req: &Request, state: Data<&AppState>) -> Response {
    if !bearer_matches(req, state.config.settings.metrics_token.as_ref()) {
        let mut response = text(StatusCode::UNAUTHORIZED, "a valid bearer token is required\n");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static header value"));
        return response;
    }
    match state.services.telemetry.scrape().await {
        Ok(Some(body)) => Response::builder().status(StatusCode::OK).content_type(CONTENT_TYPE).body(body),
        // Not reached: the route exists only with a token, and with one the series are recorded.
        Ok(None) => text(StatusCode::NOT_FOUND, "metrics are off\n"),
        Err(error) => {
            tracing::warn!(%error, "metrics scrape could not read the database");
            text(StatusCode::SERVICE_UNAVAILABLE, "the database is not available; try again later\n")
        }
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
    Response::builder().status(status).content_type("text/plain; charset=utf-8").body(body)
}
