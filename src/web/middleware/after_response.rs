//! Work after the response is sent: the response body is wrapped so that a guard starts the GC
//! pass when the body has been fully sent (or the client went away). Spawning when the endpoint
//! returns would run *before* the body is sent and could add to its latency.

use std::{io, sync::Arc};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use poem::{Body, Endpoint, IntoResponse, Request, Response};

use crate::{guarded_body::GuardedBody, lifecycle::GcRunner};

/// Starts a GC pass when the response body it rides with is dropped.
struct CollectAfter(Option<GcRunner>);

impl Drop for CollectAfter {
    fn drop(&mut self) {
        if let Some(runner) = self.0.take() {
            runner.spawn_pass();
        }
    }
}

pub async fn collect_after_response<E: Endpoint>(
    ep: Arc<E>,
    req: Request,
    runner: Option<GcRunner>,
) -> poem::Result<Response> {
    let result = ep.call(req).await.map(IntoResponse::into_response);
    let Some(runner) = runner else { return result };
    // Errors become pages further out; a GC pass after those is fine too, but is not needed.
    let mut response = result?;
    let inner: BoxBody<Bytes, io::Error> = response.take_body().into();
    response.set_body(Body::from(BoxBody::new(GuardedBody::new(inner, CollectAfter(Some(runner))))));
    Ok(response)
}
