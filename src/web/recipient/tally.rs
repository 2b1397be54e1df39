//! The body of a file or archive response, recording what it hands to the connection. Before a
//! chunk goes past the range written to the database, the range is moved a step ahead of it (the
//! first write also starts the delivery grace), so a response cut by a crash still counts every
//! byte the browser can have got. When the body is dropped (sent to the end, or the client went
//! away) it records how far it really got. Ranges are of the response's bytes here; the delivery
//! maps them onto the files they are.

use std::{
    io,
    pin::Pin,
    sync::Mutex,
    task::{Context, Poll, ready},
};

use bytes::{Buf, Bytes};
use futures_util::future::BoxFuture;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use poem::Body;

use crate::{
    lifecycle::RangeRows,
    services::delivery::{Deliveries, Delivery},
};

/// The least a record reaches past the bytes already handed over: a response records at most
/// `RECORDS_PER_RESPONSE` times, and never more often than once per this many bytes.
const RECORD_STEP_MIN: u64 = 8 << 20;
const RECORDS_PER_RESPONSE: u64 = 8;

/// Who to tell, and which bytes of what this response sends.
struct Report {
    deliveries: Deliveries,
    delivery: Delivery,
    start: u64,
    len: u64,
}

struct Tally {
    inner: BoxBody<Bytes, io::Error>,
    sent: u64,
    /// The stream said it had nothing more (an empty file sends no bytes, yet is delivered).
    ended: bool,
    /// This response's ranges in the database, once written, and where they reach.
    rows: RangeRows,
    recorded_to: u64,
    /// The ranges being written, and the chunk that waits for them. (In a mutex only because a
    /// body must be `Sync`; it is only ever reached through `&mut self`.)
    writing: Option<Mutex<BoxFuture<'static, RangeRows>>>,
    held: Option<Frame<Bytes>>,
    report: Option<Report>,
}

/// `body` (the `len` bytes from `start` of what `delivery` sends), recording what it sends.
pub fn tallied(body: Body, deliveries: Deliveries, delivery: Delivery, start: u64, len: u64) -> Body {
    let tally = Tally {
        inner: body.into(),
        sent: 0,
        ended: false,
        rows: RangeRows::default(),
        recorded_to: start,
        writing: None,
        held: None,
        report: Some(Report { deliveries, delivery, start, len }),
    };
    Body::from(BoxBody::new(tally))
}

impl Tally {
    /// Starts writing the range up to a step past `reach` (the end of the chunk about to go).
    fn record_ahead(&mut self, reach: u64) {
        let Some(report) = &self.report else { return };
        let step = RECORD_STEP_MIN.max(report.len / RECORDS_PER_RESPONSE);
        let to = reach.saturating_add(step).min(report.start + report.len).max(reach);
        self.recorded_to = to;
        let (deliveries, delivery, rows, start) =
            (report.deliveries.clone(), report.delivery.clone(), self.rows.clone(), report.start);
        self.writing = Some(Mutex::new(Box::pin(async move { deliveries.sending(&delivery, rows, start, to).await })));
    }

    fn held_len(&self) -> u64 {
        self.held.as_ref().and_then(Frame::data_ref).map_or(0, |data| data.remaining() as u64)
    }
}

impl HttpBody for Tally {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(writing) = this.writing.as_mut() {
                let writing = writing.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
                this.rows = ready!(writing.as_mut().poll(cx));
                this.writing = None;
            }
            if let Some(frame) = this.held.take() {
                this.sent += frame.data_ref().map_or(0, |data| data.len() as u64);
                return Poll::Ready(Some(Ok(frame)));
            }
            let polled = ready!(Pin::new(&mut this.inner).poll_frame(cx));
            match polled {
                Some(Ok(frame)) => {
                    let len = frame.data_ref().map_or(0, |data| data.len() as u64);
                    let start = this.report.as_ref().map_or(0, |r| r.start);
                    let reach = start + this.sent + len;
                    if len > 0 && reach > this.recorded_to {
                        this.record_ahead(reach);
                        this.held = Some(frame);
                        continue;
                    }
                    this.sent += len;
                    return Poll::Ready(Some(Ok(frame)));
                }
                None => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.writing.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // A held chunk was taken from the inner body but is still to come.
        let inner = self.inner.size_hint();
        let held = self.held_len();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + held);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        let Some(report) = self.report.take() else { return };
        let end = report.start + self.sent;
        // Nothing sent or recorded changes nothing; the record needs the runtime, gone only at shutdown.
        if self.sent == 0 && !self.ended && self.rows.is_empty() && self.writing.is_none() {
            return;
        }
        let writing = self.writing.take().map(|w| w.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()));
        let rows = std::mem::take(&mut self.rows);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // Ranges still being written are finished first, so the true ends come last.
                let rows = match writing {
                    Some(writing) => writing.await,
                    None => rows,
                };
                report.deliveries.delivered(&report.delivery, rows, report.start, end).await
            });
        }
    }
}
