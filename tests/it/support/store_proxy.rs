//! A small HTTP proxy of the tests' own in front of the S3 server, playing a store that
//! misbehaves. It forwards every request as it came (the Host header is kept, since the request's
//! signature covers it), or, switched to `Lie`, answers every DELETE "204 deleted" and keeps the
//! object, or, switched to `Stall`, takes every request and never answers. It counts the requests
//! it lied to and stalled, so a test waits for a positive signal, and notes every request it
//! forwarded (method and path), so a test sees which requests an action made. One part number of
//! multipart uploads can be made to fail once another part has been stored (`fail_part_after`),
//! so a test can have an earlier part fail after a later one succeeded.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, AtomicUsize, Ordering},
    },
};

use http_body_util::{BodyExt, Empty, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Bytes, Incoming},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use tokio::{net::TcpListener, sync::watch};

/// How the proxy treats the requests it takes from now on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    Forward,
    /// DELETE answered "204 No Content" without reaching the store; everything else forwarded.
    Lie,
    /// Every request taken and never answered.
    Stall,
}

type Body = BoxBody<Bytes, hyper::Error>;

struct Shared {
    upstream: String,
    mode: AtomicU8,
    lied: AtomicUsize,
    stalled: AtomicUsize,
    forwarded: Mutex<Vec<(Method, String)>>,
    /// The part number answered "500" once the other part number has been stored.
    failing_part: Mutex<Option<(usize, usize)>>,
    /// The part numbers the store answered with success, in order.
    stored_parts: watch::Sender<Vec<usize>>,
    client: Client<HttpConnector, Incoming>,
}

pub struct StoreProxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl StoreProxy {
    /// A proxy on 127.0.0.1 forwarding to `upstream` (`host:port`), in `Forward` mode.
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            mode: AtomicU8::new(Mode::Forward as u8),
            lied: AtomicUsize::new(0),
            stalled: AtomicUsize::new(0),
            forwarded: Mutex::new(Vec::new()),
            failing_part: Mutex::new(None),
            stored_parts: watch::Sender::new(Vec::new()),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let serving = shared.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let shared = serving.clone();
                let service = service_fn(move |request| answer(shared.clone(), request));
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(tcp), service));
            }
        });
        Self { addr, shared }
    }

    /// The endpoint URL an S3 client is given.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set(&self, mode: Mode) {
        self.shared.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// DELETEs answered without reaching the store.
    pub fn lies(&self) -> usize {
        self.shared.lied.load(Ordering::SeqCst)
    }

    /// The requests forwarded since the last call, as method and path with query.
    pub fn take_forwarded(&self) -> Vec<(Method, String)> {
        std::mem::take(&mut *self.shared.forwarded.lock().unwrap())
    }

    /// Every PUT of part `part` (numbered from 1, as S3 does) is answered "500" (its body read
    /// first), but only once part `after` has been stored; `None` forwards every part again.
    pub fn fail_part_after(&self, failing: Option<(usize, usize)>) {
        *self.shared.failing_part.lock().unwrap() = failing;
    }

    /// The part numbers the store answered with success, in the order it answered.
    pub fn stored_parts(&self) -> Vec<usize> {
        self.shared.stored_parts.borrow().clone()
    }

    /// Requests taken and left unanswered.
    pub fn stalled(&self) -> usize {
        self.shared.stalled.load(Ordering::SeqCst)
    }
}

async fn answer(shared: Arc<Shared>, mut request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let mode = shared.mode.load(Ordering::SeqCst);
    if mode == Mode::Stall as u8 {
        shared.stalled.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    if mode == Mode::Lie as u8 && request.method() == Method::DELETE {
        shared.lied.fetch_add(1, Ordering::SeqCst);
        return Ok(status(StatusCode::NO_CONTENT));
    }
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let part = part_number(&request);
    let failing = *shared.failing_part.lock().unwrap();
    if let (Some(part), Some((failing, after))) = (part, failing)
        && part == failing
    {
        let mut stored = shared.stored_parts.subscribe();
        let _ = stored.wait_for(|parts| parts.contains(&after)).await;
        let _ = request.into_body().collect().await;
        return Ok(status(StatusCode::INTERNAL_SERVER_ERROR));
    }
    shared.forwarded.lock().unwrap().push((request.method().clone(), path.clone()));
    *request.uri_mut() = format!("http://{}{path}", shared.upstream).parse().unwrap();
    Ok(match shared.client.request(request).await {
        Ok(response) => {
            if let Some(part) = part.filter(|_| response.status().is_success()) {
                shared.stored_parts.send_modify(|parts| parts.push(part));
            }
            response.map(BodyExt::boxed)
        }
        Err(_) => status(StatusCode::BAD_GATEWAY),
    })
}

/// The part number of a PUT of one part of a multipart upload (`?partNumber=N&uploadId=…`).
fn part_number(request: &Request<Incoming>) -> Option<usize> {
    if request.method() != Method::PUT {
        return None;
    }
    let query = request.uri().query()?;
    query.split('&').find_map(|pair| pair.strip_prefix("partNumber=")?.parse().ok())
}

fn status(code: StatusCode) -> Response<Body> {
    let empty = Empty::<Bytes>::new().map_err(|never| match never {}).boxed();
    Response::builder().status(code).body(empty).unwrap()
}
