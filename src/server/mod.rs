//! The HTTP server loop: the app's poem endpoint served by hyper (HTTP/1.1) over the bound TCP
//! listener, with the transport limits poem's own `Server` lacks: a deadline for a request's
//! headers, one for an idle keep-alive connection, one for a request body that stops sending,
//! one for a small body as a whole, one for a response nobody reads, a floor under a body's
//! rate, and a cap on open connections of which one client's network holds only a share.
//! Without them a client that sends half a request line, or an upload at a byte every ten
//! seconds, holds a connection (and a task) for as long as it likes, and a few hundred such
//! take every slot. A body cut by one of these rules is answered 408 when the app could not
//! answer it otherwise, and counted (`watasu_request_bodies_cut_total`).
//!
//! hyper knows when bytes arrive but not when the app is busy, so each connection shares a small
//! state with the service: the service marks a request in flight from its start until the
//! response body is dropped, and a watchdog closes the connection when it waits for the client
//! past a deadline (see [`conn`]).

mod conn;
mod rate;
mod share;

pub use rate::MinRate;
pub use share::{ClientPrefixes, SHARE_DIVISOR, default_per_client};

use std::{future::Future, io, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use ipnet::IpNet;
use poem::{
    Endpoint, EndpointExt, IntoEndpoint, Request,
    http::uri::Scheme,
    listener::Acceptor,
    web::{LocalAddr, RemoteAddr},
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::metrics::Metrics;

use conn::{BodyProgress, BodyRule, ConnState, Cut, ResponseEnd, Watched, overdue};
use share::{ClientShares, Counted};

/// The transport limits, from the settings.
#[derive(Clone, Debug)]
pub struct Limits {
    /// A request's headers must be complete this long after its first byte (or after the
    /// connection opened).
    pub header_timeout: Duration,
    /// A keep-alive connection with no request is closed after this long.
    pub idle_timeout: Duration,
    /// A request body that sends nothing for this long is cut, and so is a connection whose
    /// client reads nothing of its response for this long; one that keeps moving never is.
    pub body_timeout: Duration,
    /// A body no larger than `small_body_bytes` (a form; the whole request body when its length
    /// is announced, its first bytes when chunked) must arrive whole within this long.
    pub small_body_timeout: Duration,
    /// What counts as a small body: the largest form the app reads.
    pub small_body_bytes: u64,
    /// Connections open at once; further ones wait in the listen queue until one closes.
    pub max_connections: usize,
    /// Connections one client (its network, see `client_prefixes`) may hold at once; more are
    /// answered 429.
    pub per_client_connections: usize,
    /// The networks counted as one client.
    pub client_prefixes: ClientPrefixes,
    /// The rate every request body must keep up while the app waits for it.
    pub min_body_rate: MinRate,
    /// Reverse proxies: their connections carry many clients, so only the cap holds them.
    pub trusted_proxies: Vec<IpNet>,
}

/// Serves `ep` on `acceptor` until `shutdown` completes; then stops accepting, lets requests in
/// flight finish for up to `grace` and closes what is left. Cut request bodies are counted in
/// `metrics`.
pub async fn serve<A, E>(
    mut acceptor: A,
    ep: E,
    limits: Limits,
    metrics: Metrics,
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
    let shares =
        ClientShares::new(limits.per_client_connections, limits.client_prefixes, limits.trusted_proxies.clone());
    let served = Arc::new(Served { limits, metrics });
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
        let Some(counted) = shares.admit(remote_addr.as_socket_addr().map(|a| a.ip())) else {
            // The slot goes back at once: this client already holds its share.
            tracing::debug!(%remote_addr, "refusing a connection over its client network's share");
            share::refuse(io);
            continue;
        };
        let peer = Peer { local_addr, remote_addr, scheme };
        let held = Held { _slot: slot, _counted: counted };
        tokio::spawn(serve_connection(io, ep.clone(), served.clone(), peer, stop_rx.clone(), kill_rx.clone(), held));
    }
    drop(acceptor);
    let _ = stop_tx.send(true);
    tracing::info!(grace_seconds = grace.as_secs_f32(), "stopped accepting; finishing requests in flight");
    let all = u32::try_from(served.limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, slots.acquire_many(all)).await.is_err() {
        let _ = kill_tx.send(true);
        let _ = slots.acquire_many(all).await;
    }
    tracing::info!("server stopped");
    Ok(())
}

/// What every connection reads: the limits, and where cut bodies are counted.
struct Served {
    limits: Limits,
    metrics: Metrics,
}

/// What an open connection holds until it ends: a slot of the cap and a place in its client's share.
struct Held {
    _slot: OwnedSemaphorePermit,
    _counted: Counted,
}

/// Where a connection comes from and goes to, as poem's requests carry it.
#[derive(Clone)]
struct Peer {
    local_addr: LocalAddr,
    remote_addr: RemoteAddr,
    scheme: Scheme,
}

/// One connection, until it ends, a deadline closes it, or the server stops (gracefully, then
/// for good). The slot and the client's place are given back when it ends.
async fn serve_connection<IO, E>(
    io: IO,
    ep: Arc<E>,
    served: Arc<Served>,
    peer: Peer,
    mut stop: watch::Receiver<bool>,
    mut kill: watch::Receiver<bool>,
    _held: Held,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    E: Endpoint<Output = poem::Response> + 'static,
{
    let state = ConnState::new();
    let remote_addr = peer.remote_addr.clone();
    let service = {
        let state = state.clone();
        let served = served.clone();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            handle(req, ep.clone(), state.clone(), peer.clone(), served.clone())
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
            _ = overdue(&state, &served.limits) => {
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
/// stalls (and, when small, for its whole time), and `connection: close` added when the
/// connection must end after it.
async fn handle<E: Endpoint<Output = poem::Response>>(
    req: hyper::Request<Incoming>,
    ep: Arc<E>,
    state: Arc<ConnState>,
    peer: Peer,
    served: Arc<Served>,
) -> Result<hyper::Response<BoxBody<Bytes, io::Error>>, std::convert::Infallible> {
    let end = ResponseEnd::begin(state.clone());
    let mut req: Request = (req, peer.local_addr, peer.remote_addr, peer.scheme).into();
    if may_have_body(&req) {
        let limits = &served.limits;
        let rule = BodyRule {
            stall_timeout: limits.body_timeout,
            // An announced length over the form limit is an upload: only the stall rule holds it.
            whole_within: (announced_length(&req).unwrap_or(0) <= limits.small_body_bytes)
                .then_some(limits.small_body_timeout),
            small_body_bytes: limits.small_body_bytes,
            min_rate: limits.min_body_rate,
        };
        let body = req.take_body();
        req.set_body(BodyProgress::wrap(body, rule, state.clone()));
    }
    let mut response = ep.get_response(req).await;
    if let Some(cut) = state.take_cut() {
        served.metrics.request_body_cut(cut.label());
        response = answer_cut(response, cut);
    }
    if state.must_close() {
        response.headers_mut().insert("connection", poem::http::HeaderValue::from_static("close"));
    }
    let response: hyper::Response<BoxBody<Bytes, io::Error>> = response.into();
    Ok(response.map(|body| BoxBody::new(end.attach(body))))
}

/// The answer to a request whose body was cut: the app's own when it still succeeded (an upload
/// that kept what arrived tells its client where to resume), else 408 (the app's 400 or 500
/// would blame the request or itself for what the client's link did).
fn answer_cut(response: poem::Response, cut: Cut) -> poem::Response {
    if response.status().is_success() {
        return response;
    }
    let words = match cut {
        Cut::Stalled => "the request body stopped arriving",
        Cut::SmallBodySlow => "the request body took too long",
        Cut::BelowRate => "the request body arrived too slowly",
    };
    poem::Response::builder()
        .status(poem::http::StatusCode::REQUEST_TIMEOUT)
        .content_type("text/plain; charset=utf-8")
        .body(words)
}

/// A request that announces a body (a length above zero, or chunks).
fn may_have_body(req: &Request) -> bool {
    req.headers().contains_key("transfer-encoding") || announced_length(req).is_some_and(|n| n > 0)
}

/// The body length a request announces in `Content-Length` (hyper has refused a malformed one).
fn announced_length(req: &Request) -> Option<u64> {
    req.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok())
}
