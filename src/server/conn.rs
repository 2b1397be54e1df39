//! One connection's side of the transport limits: what it is waiting for (a request's headers,
//! the next request, or nothing while the app works), whether its client stopped reading, the
//! watchdog that says when it waited too long, and the body wrappers that mark a request's start
//! and end and cut a stalled upload, a small body that takes too long, or one below the rate floor.

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::Notify,
    time::{Instant, Sleep},
};

use super::{
    Limits,
    rate::{MinRate, RateFloor},
};
use crate::guarded_body::GuardedBody;

/// What a connection waits for.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Between requests, since then: the idle (keep-alive) deadline runs.
    Idle(Instant),
    /// A request's first bytes came (or the connection just opened) then: the header deadline runs.
    Head(Instant),
    /// Requests in flight: the app is working or the body is being read; no deadline here
    /// (a stalled body is the body wrapper's to cut).
    Busy(usize),
}

/// Shared by a connection's IO wrapper, its service and its watchdog.
#[derive(Debug)]
pub struct ConnState {
    phase: Mutex<Phase>,
    changed: Notify,
    close: AtomicBool,
    /// Since when the socket has refused more bytes (the client reads nothing), if it does.
    write_blocked: Mutex<Option<Instant>>,
    /// The same as a flag, so that a write that goes through need not take the lock.
    write_waiting: AtomicBool,
    /// Why the request body was cut, once it was (the connection then closes).
    cut: Mutex<Option<Cut>>,
}

/// Why a request body was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Nothing arrived for the body timeout.
    Stalled,
    /// A small body was not whole within the small-body timeout.
    SmallBodySlow,
    /// The body fell a window behind the minimum rate.
    BelowRate,
}

impl Cut {
    /// The metric's label, and the log's words.
    pub fn label(self) -> &'static str {
        match self {
            Cut::Stalled => "stalled",
            Cut::SmallBodySlow => "small_body_slow",
            Cut::BelowRate => "below_rate",
        }
    }
}

impl ConnState {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            phase: Mutex::new(Phase::Head(Instant::now())),
            changed: Notify::new(),
            close: AtomicBool::new(false),
            write_blocked: Mutex::new(None),
            write_waiting: AtomicBool::new(false),
            cut: Mutex::new(None),
        })
    }

    /// A write returned: pending starts the write-progress clock (the watchdog is told), bytes
    /// taken stop it. Whichever phase the connection is in, a client that reads nothing is cut.
    fn wrote(&self, result: &Poll<io::Result<usize>>) {
        match result {
            Poll::Pending if !self.write_waiting.swap(true, Ordering::Relaxed) => {
                *self.write_blocked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                self.changed.notify_one();
            }
            Poll::Ready(Ok(n)) if *n > 0 && self.write_waiting.swap(false, Ordering::Relaxed) => {
                *self.write_blocked.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            _ => {}
        }
    }

    fn update(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *phase = f(*phase);
        drop(phase);
        self.changed.notify_one();
    }

    /// Bytes arrived: an idle connection now has a request coming.
    fn bytes_read(&self) {
        let idle = matches!(*self.phase.lock().unwrap_or_else(|e| e.into_inner()), Phase::Idle(_));
        if idle {
            self.update(|_| Phase::Head(Instant::now()));
        }
    }

    /// The connection must close once the current response is written.
    pub fn must_close(&self) -> bool {
        self.close.load(Ordering::Relaxed)
    }

    /// Why the current request's body was cut, if it was (answered once).
    pub fn take_cut(&self) -> Option<Cut> {
        self.cut.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        let waiting_for_client = match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Idle(since) => Some(since + limits.idle_timeout),
            Phase::Head(since) => Some(since + limits.header_timeout),
            Phase::Busy(_) => None,
        };
        let unread =
            self.write_blocked.lock().unwrap_or_else(|e| e.into_inner()).map(|since| since + limits.body_timeout);
        waiting_for_client.into_iter().chain(unread).min()
    }
}

/// Resolves when the connection has waited for the client past its deadline (then it is dropped,
/// which closes the socket: a graceful shutdown would wait for the half-sent request).
pub async fn overdue(state: &ConnState, limits: &Limits) {
    loop {
        match state.deadline(limits) {
            Some(deadline) if Instant::now() >= deadline => return,
            Some(deadline) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = state.changed.notified() => {}
                }
            }
            None => state.changed.notified().await,
        }
    }
}

/// The socket, reporting to the state when bytes arrive.
pub struct Watched<Io> {
    inner: Io,
    state: Arc<ConnState>,
}

impl<Io> Watched<Io> {
    pub fn new(inner: Io, state: Arc<ConnState>) -> Self {
        Self { inner, state }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Watched<Io> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.bytes_read();
        }
        result
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Watched<Io> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.state.wrote(&result);
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.state.wrote(&result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A request in flight, from the service's start until its response body is dropped (fully sent,
/// or the client went away).
pub struct ResponseEnd(Arc<ConnState>);

impl ResponseEnd {
    pub fn begin(state: Arc<ConnState>) -> Self {
        state.update(|phase| match phase {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        });
        Self(state)
    }

    /// The response body, ending the request when it is dropped.
    pub fn attach(self, inner: BoxBody<Bytes, io::Error>) -> GuardedBody<Self> {
        GuardedBody::new(inner, self)
    }
}

impl Drop for ResponseEnd {
    fn drop(&mut self) {
        self.0.update(|phase| match phase {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        });
    }
}

/// What a request body is held to.
#[derive(Clone, Copy, Debug)]
pub struct BodyRule {
    /// The longest wait for the next bytes.
    pub stall_timeout: std::time::Duration,
    /// The longest time for the whole body while it is small; `None` for an announced upload.
    pub whole_within: Option<std::time::Duration>,
    /// Past this many bytes a body is an upload, held to the stall rule and the rate floor.
    pub small_body_bytes: u64,
    /// The rate every body must keep up (see [`super::rate`]).
    pub min_rate: MinRate,
}

/// A request body that fails with `TimedOut` when the client sends nothing for the stall timeout
/// while the app waits for it, when a small body is not whole within its time, or when the body
/// falls a window behind the rate floor. The stall clock starts at the first wait after a chunk,
/// and the floor counts waiting only, so time the app spends between reads (writing to disk,
/// hashing) never counts, and an upload that keeps coming above the floor, however long it
/// takes, is never cut. A small body has no such excuse: a form sent a byte at a time would
/// otherwise hold its connection for as long as its sender likes.
pub struct BodyProgress {
    inner: BoxBody<Bytes, io::Error>,
    rule: BodyRule,
    stall: Option<Pin<Box<Sleep>>>,
    whole_by: Option<Pin<Box<Sleep>>>,
    rate: Option<RateFloor>,
    /// When the body falls a window behind the floor, while it waits.
    behind_by: Option<Pin<Box<Sleep>>>,
    received: u64,
    state: Arc<ConnState>,
}

impl BodyProgress {
    pub fn wrap(body: poem::Body, rule: BodyRule, state: Arc<ConnState>) -> poem::Body {
        let inner: BoxBody<Bytes, io::Error> = body.into();
        let whole_by = rule.whole_within.map(|within| Box::pin(tokio::time::sleep(within)));
        let rate = rule.min_rate.floor();
        let body = Self { inner, rule, stall: None, whole_by, rate, behind_by: None, received: 0, state };
        poem::Body::from(BoxBody::new(body))
    }

    /// Ends the body with `TimedOut`; the rest will not be read, so the connection must close.
    fn cut(&mut self, why: Cut) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.stall = None;
        self.whole_by = None;
        self.behind_by = None;
        self.rate = None;
        self.state.close.store(true, Ordering::Relaxed);
        *self.state.cut.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        tracing::info!(why = why.label(), "request body cut; closing the connection");
        Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::TimedOut, why.label()))))
    }

    /// Whether the wait that just began (or goes on) has put the body a window behind the floor.
    fn behind_the_floor(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(rate) = self.rate.as_mut() else { return false };
        let behind_by =
            self.behind_by.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(rate.waiting(Instant::now()))));
        behind_by.as_mut().poll(cx).is_ready()
    }
}

impl HttpBody for BodyProgress {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.stall = None;
                this.behind_by = None;
                let bytes = match &frame {
                    Some(Ok(frame)) => frame.data_ref().map_or(0, |data| data.len() as u64),
                    _ => 0,
                };
                this.received += bytes;
                if this.received > this.rule.small_body_bytes {
                    this.whole_by = None;
                }
                if let Some(rate) = this.rate.as_mut()
                    && !rate.arrived(Instant::now(), bytes)
                {
                    return this.cut(Cut::BelowRate);
                }
                Poll::Ready(frame)
            }
            Poll::Pending => {
                if let Some(whole_by) = this.whole_by.as_mut()
                    && whole_by.as_mut().poll(cx).is_ready()
                {
                    return this.cut(Cut::SmallBodySlow);
                }
                if this.behind_the_floor(cx) {
                    return this.cut(Cut::BelowRate);
                }
                let timeout = this.rule.stall_timeout;
                let stall = this.stall.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if stall.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.cut(Cut::Stalled)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
