//! Work after the response is sent: the response body is wrapped so that a guard starts the GC
//! pass when the body has been fully sent (or the client went away). Spawning when the endpoint
//! returns would run *before* the body is sent and could add to its latency.

use std::{
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use poem::{Body, Endpoint, IntoResponse, Request, Response};

use crate::lifecycle::GcRunner;

/// A body that forwards everything (frames and size hint, so Content-Length stays) and starts a
/// GC pass when it is dropped.
struct ThenCollect {
    inner: BoxBody<Bytes, io::Error>,
    runner: Option<GcRunner>,
}

impl HttpBody for ThenCollect {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ThenCollect {
    fn drop(&mut self) {
        if let Some(runner) = self.runner.take() {
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
    response.set_body(Body::from(BoxBody::new(ThenCollect { inner, runner: Some(runner) })));
    Ok(response)
}
