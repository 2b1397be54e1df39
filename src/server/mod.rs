//! The HTTP server loop: the app's poem endpoint served by hyper (HTTP/1.1) over the bound TCP
//! listener, with the transport limits poem's own `Server` lacks: a deadline for a request's
//! headers, one for an idle keep-alive connection, one for a request body that stops sending,
//! and a cap on open connections. Without them a client that sends half a request line, or
//! nothing, holds a connection (and a task) forever.
//!
//! hyper knows when bytes arrive but not when the app is busy, so each connection shares a small
//! state with the service: the service marks a request in flight from its start until the
//! response body is dropped, and a watchdog closes the connection when it waits for the client
//! past a deadline (see [`conn`]).

mod conn;

use std::{future::Future, io, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use poem::{
    Endpoint, EndpointExt, IntoEndpoint, Request,
    http::uri::Scheme,
    listener::Acceptor,
    web::{LocalAddr, RemoteAddr},
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use conn::{BodyProgress, ConnState, ResponseEnd, Watched, overdue};

/// The transport limits, from the settings.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A request's headers must be complete this long after its first byte (or after the
    /// connection opened).
    pub header_timeout: Duration,
    /// A keep-alive connection with no request is closed after this long.
    pub idle_timeout: Duration,
    /// A request body that sends nothing for this long is cut; one that keeps sending never is.
    pub body_timeout: Duration,
    /// Connections open at once; further ones wait in the listen queue until one closes.
    pub max_connections: usize,
}

/// Serves `ep` on `acceptor` until `shutdown` completes; then stops accepting, lets requests in
/// flight finish for up to `grace` and closes what is left.
pub async fn serve<A, E>(
    mut acceptor: A,
    ep: E,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()>
where
    A: Acceptor,
    A::Io: 'static,
    E: IntoEndpoint,
    E::Endpoint: 'static,
{
    let ep = Arc::new(ep.into_endpoint().map_to_response());
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // false: serving; true: stop (graceful); the second sender closes what is left after the grace.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (kill_tx, kill_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    tracing::info!("server started");
    loop {
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            accepted = acceptor.accept() => accepted,
        };
        let (io, local_addr, remote_addr, scheme) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: a pause keeps the loop from spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let peer = Peer { local_addr, remote_addr, scheme };
        tokio::spawn(serve_connection(io, ep.clone(), limits, peer, stop_rx.clone(), kill_rx.clone(), slot));
    }
    drop(acceptor);
    let _ = stop_tx.send(true);
    tracing::info!(grace_seconds = grace.as_secs_f32(), "stopped accepting; finishing requests in flight");
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, slots.acquire_many(all)).await.is_err() {
        let _ = kill_tx.send(true);
        let _ = slots.acquire_many(all).await;
    }
    tracing::info!("server stopped");
    Ok(())
}

/// Where a connection comes from and goes to, as poem's requests carry it.
#[derive(Clone)]
struct Peer {
    local_addr: LocalAddr,
    remote_addr: RemoteAddr,
    scheme: Scheme,
}

/// One connection, until it ends, a deadline closes it, or the server stops (gracefully, then
/// for good). The slot is given back when it ends.
async fn serve_connection<IO, E>(
    io: IO,
    ep: Arc<E>,
    limits: Limits,
    peer: Peer,
    mut stop: watch::Receiver<bool>,
    mut kill: watch::Receiver<bool>,
    _slot: OwnedSemaphorePermit,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    E: Endpoint<Output = poem::Response> + 'static,
{
    let state = ConnState::new();
    let remote_addr = peer.remote_addr.clone();
    let service = {
        let state = state.clone();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            handle(req, ep.clone(), state.clone(), peer.clone(), limits.body_timeout)
        })
    };
    let io = hyper_util::rt::TokioIo::new(Watched::new(io, state.clone()));
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = &mut connection => break,
            // Dropping the connection closes the socket at once.
            _ = overdue(&state, &limits) => {
                tracing::debug!(%remote_addr, "closing a connection that kept the server waiting");
                break;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = kill.wait_for(|kill| *kill) => break,
        }
    }
}

/// One request: marked in flight until its response body is dropped, its body watched for
/// stalls, and `connection: close` added when the connection must end after it.
async fn handle<E: Endpoint<Output = poem::Response>>(
    req: hyper::Request<Incoming>,
    ep: Arc<E>,
    state: Arc<ConnState>,
    peer: Peer,
    body_timeout: Duration,
) -> Result<hyper::Response<BoxBody<Bytes, io::Error>>, std::convert::Infallible> {
    let end = ResponseEnd::begin(state.clone());
    let mut req: Request = (req, peer.local_addr, peer.remote_addr, peer.scheme).into();
    if may_have_body(&req) {
        let body = req.take_body();
        req.set_body(BodyProgress::wrap(body, body_timeout, state.clone()));
    }
    let mut response = ep.get_response(req).await;
    if state.must_close() {
        response.headers_mut().insert("connection", poem::http::HeaderValue::from_static("close"));
    }
    let response: hyper::Response<BoxBody<Bytes, io::Error>> = response.into();
    Ok(response.map(|body| BoxBody::new(end.attach(body))))
}

/// A request that announces a body (a length above zero, or chunks).
fn may_have_body(req: &Request) -> bool {
    let headers = req.headers();
    headers.contains_key("transfer-encoding")
        || headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0)
}
