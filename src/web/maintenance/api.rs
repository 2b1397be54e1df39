//! `POST /maintenance/runs` and `GET /maintenance/runs/{id}`, for an uptime pinger or a host
//! scheduler. Both need `Authorization: Bearer <WATASU_MAINTENANCE_TOKEN>`; without a configured
//! token the routes do not exist. The trigger answers 202 at once and runs in the background; the
//! same Idempotency-Key gives back the same run; triggers closer than the minimum interval get 429.

use poem::{
    Request, Response, handler,
    http::{StatusCode, header},
    web::{Data, Path},
};
use serde_json::json;

use crate::{
    maintenance::{Kind, Run, TriggerOutcome},
    web::{AppState, bearer::bearer_matches, paths},
};

/// Longest Idempotency-Key accepted.
const MAX_KEY_LEN: usize = 255;

/// POST /maintenance/runs[?kind=K]
#[handler]
pub async fn trigger(req: &Request, state: Data<&AppState>) -> Response {
    if !authorized(&state, req) {
        return unauthorized();
    }
    let kind_text = req.params::<KindQuery>().ok().and_then(|q| q.kind).unwrap_or_else(|| "all".to_owned());
    let Some(kind) = Kind::requestable(&kind_text) else {
        return problem(StatusCode::BAD_REQUEST, "unknown kind");
    };
    let key = req.header("idempotency-key");
    if key.is_some_and(|k| k.is_empty() || k.len() > MAX_KEY_LEN || !k.bytes().all(|b| b.is_ascii_graphic())) {
        return problem(StatusCode::BAD_REQUEST, "Idempotency-Key must be 1 to 255 visible ASCII characters");
    }
    match state.services.maintenance.trigger(kind, key).await {
        Ok(TriggerOutcome::Accepted(run)) => {
            let maintenance = state.services.maintenance.clone();
            let run_id = run.id;
            tokio::spawn(async move {
                if let Err(error) = maintenance.execute(run_id).await {
                    tracing::warn!(run_id, %error, "triggered maintenance run failed");
                }
            });
            accepted(&run)
        }
        Ok(TriggerOutcome::Replayed(run)) => accepted(&run),
        Ok(TriggerOutcome::TooSoon(wait)) => {
            let mut response = problem(StatusCode::TOO_MANY_REQUESTS, "too soon after the last trigger");
            response.headers_mut().insert(header::RETRY_AFTER, wait.as_secs().into());
            response
        }
        Ok(TriggerOutcome::KeyReused) => {
            problem(StatusCode::UNPROCESSABLE_ENTITY, "this Idempotency-Key was used for another kind of run")
        }
        Err(error) => unavailable(&error),
    }
}

#[derive(serde::Deserialize)]
struct KindQuery {
    kind: Option<String>,
}

/// GET /maintenance/runs/{id}
#[handler]
pub async fn show(req: &Request, state: Data<&AppState>, Path(id): Path<String>) -> Response {
    if !authorized(&state, req) {
        return unauthorized();
    }
    let Ok(id) = id.parse::<i64>() else { return problem(StatusCode::NOT_FOUND, "no such run") };
    let ledger = state.services.maintenance.ledger();
    let run = match ledger.get(id).await {
        Ok(Some(run)) => run,
        Ok(None) => return problem(StatusCode::NOT_FOUND, "no such run"),
        Err(error) => return unavailable(&error),
    };
    match ledger.summary(id).await {
        Ok(items) => json_response(StatusCode::OK, &json!({ "run": run, "items": items })),
        Err(error) => unavailable(&error),
    }
}

fn authorized(state: &AppState, req: &Request) -> bool {
    bearer_matches(req, state.config.settings.maintenance_token.as_ref())
}

fn accepted(run: &Run) -> Response {
    let mut response = json_response(StatusCode::ACCEPTED, &json!({ "run": run }));
    let location = paths::maintenance_run(run.id);
    response.headers_mut().insert(header::LOCATION, location.parse().expect("a path is a header value"));
    response
}

fn unauthorized() -> Response {
    let mut response = problem(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    response.headers_mut().insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static header value"));
    response
}

fn unavailable(error: &dyn std::fmt::Display) -> Response {
    tracing::warn!(%error, "maintenance endpoint could not reach the database");
    problem(StatusCode::SERVICE_UNAVAILABLE, "the database is not available; try again later")
}

fn problem(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    Response::builder().status(status).content_type("application/json").body(body.to_string())
}
