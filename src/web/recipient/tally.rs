//! The body of a file response, counting the bytes it hands to the connection. When the body is
//! dropped (sent to the end, or the client went away) it reports how far it got, so only bytes
//! the stream really yielded count as delivered.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use poem::Body;

use crate::{lifecycle::ClaimedFile, services::delivery::Deliveries};

/// Who to tell, and where in the file this response started.
struct Report {
    deliveries: Deliveries,
    file: ClaimedFile,
    start: u64,
}

struct Tally {
    inner: BoxBody<Bytes, io::Error>,
    sent: u64,
    /// The stream said it had nothing more (an empty file sends no bytes, yet is delivered).
    ended: bool,
    report: Option<Report>,
}

/// `body` (bytes from `start` of `file`), reporting on drop what it sent.
pub fn tallied(body: Body, deliveries: Deliveries, file: ClaimedFile, start: u64) -> Body {
    let tally = Tally { inner: body.into(), sent: 0, ended: false, report: Some(Report { deliveries, file, start }) };
    Body::from(BoxBody::new(tally))
}

impl HttpBody for Tally {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => self.sent += frame.data_ref().map_or(0, |data| data.len() as u64),
            Poll::Ready(None) => self.ended = true,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        let Some(report) = self.report.take() else { return };
        let end = report.start + self.sent;
        // Nothing sent changes nothing; the record needs the runtime, gone only at shutdown.
        if self.sent == 0 && !self.ended {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { report.deliveries.delivered(&report.file, report.start, end).await });
        }
    }
}
