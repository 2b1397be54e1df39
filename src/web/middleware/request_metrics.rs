//! Counts and times every request by the route pattern the router matched (`/s/:token`, never
//! the concrete path), its method and its status; requests no route matched count as `other`.

use std::{sync::Arc, time::Instant};

use poem::{Endpoint, IntoResponse, PathPattern, Request, Response};

use crate::metrics::Metrics;

pub async fn request_metrics<E: Endpoint>(ep: Arc<E>, req: Request, metrics: Metrics) -> poem::Result<Response> {
    if !metrics.is_enabled() {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let started = Instant::now();
    let method = req.method().clone();
    let response = match ep.call(req).await {
        Ok(response) => response.into_response(),
        Err(error) => error.into_response(),
    };
    // The router leaves its pattern on the response (error pages carry it on, see `render_errors`).
    let route = response.data::<PathPattern>().map(|pattern| pattern.0.clone());
    metrics.http_request(route.as_deref(), method.as_str(), response.status().as_u16(), started.elapsed());
    Ok(response)
}
