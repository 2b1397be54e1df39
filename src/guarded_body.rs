//! A response body that forwards everything (frames and size hint, so Content-Length stays) and
//! holds a guard until the body is dropped: fully sent, or the client went away. Whatever must
//! happen *after* a response (a GC pass, marking a connection idle) lives in the guard's `Drop`.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::BoxBody;

pub struct GuardedBody<G> {
    inner: BoxBody<Bytes, io::Error>,
    _guard: G,
}

impl<G> GuardedBody<G> {
    pub fn new(inner: BoxBody<Bytes, io::Error>, guard: G) -> Self {
        Self { inner, _guard: guard }
    }
}

impl<G: Unpin> HttpBody for GuardedBody<G> {
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
