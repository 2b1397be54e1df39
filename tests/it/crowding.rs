//! One client cannot take every connection: hundreds of connections from one address, each
//! trickling a sign-in form or half its headers, hold only its network's share of the cap, and
//! another network is answered while they are still held, directly and through the nginx files
//! of contrib/.

use std::time::{Duration, Instant};

use tokio::{io::AsyncWriteExt, net::TcpStream};

use crate::{
    both_backends,
    support::{Backend, TestApp, nginx::Nginx, raw},
};

/// Connections the trickling client opens: more than the cap of either test.
const TRICKLING: usize = 300;
/// Long enough that no trickling connection times out during a test: only the share makes room.
const HOUR: Duration = Duration::from_secs(3600);
/// The most a test waits for the refusals; they come in milliseconds.
const GENEROUS: Duration = Duration::from_secs(60);

/// `TRICKLING` connections from `source` to `addr`, alternately a `POST /login` that sent one
/// byte of its body and a request with half its headers.
async fn trickle(source: &str, addr: &str) -> Vec<TcpStream> {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let mut streams = Vec::new();
    for i in 0..TRICKLING {
        let mut stream = raw::connect_from(source, addr).await;
        let start = if i % 2 == 0 {
            format!(
                "POST /login HTTP/1.1\r\nHost: {addr}\r\nSec-Fetch-Site: same-origin\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ne"
            )
        } else {
            format!("POST /login HTTP/1.1\r\nHost: {addr}\r\n")
        };
        // A connection refused at once may already be closed; that is what the test counts later.
        let _ = stream.write_all(start.as_bytes()).await;
        streams.push(stream);
    }
    streams
}

/// How many of `streams` have ended so far, and how many of those were answered 429.
fn refusals(streams: &[TcpStream], ended: &mut [bool], answered_429: &mut usize) -> usize {
    for (stream, ended) in streams.iter().zip(ended.iter_mut()).filter(|(_, ended)| !**ended) {
        let mut buf = [0u8; 4096];
        match stream.try_read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok(read) if read > 0 => {
                let answer = String::from_utf8_lossy(&buf[..read]);
                assert!(answer.starts_with("HTTP/1.1 429"), "a trickling connection got: {answer}");
                *answered_429 += 1;
                *ended = true;
            }
            _ => *ended = true,
        }
    }
    ended.iter().filter(|e| **e).count()
}

/// Waits until `enough(ended, answered_429)` holds for `streams`; answers both counts.
async fn wait_for_refusals(streams: &[TcpStream], enough: impl Fn(usize, usize) -> bool) -> (usize, usize) {
    let (mut ended, mut answered_429) = (vec![false; streams.len()], 0);
    let started = Instant::now();
    loop {
        let count = refusals(streams, &mut ended, &mut answered_429);
        if enough(count, answered_429) {
            return (count, answered_429);
        }
        assert!(started.elapsed() < GENEROUS, "{count} trickling connections ended, {answered_429} with a 429");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn still_open(streams: &[TcpStream]) -> usize {
    let mut buf = [0u8; 64];
    streams
        .iter()
        .filter(|s| matches!(s.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock))
        .count()
}

fn healthz(addr: &str) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

/// Sends a `GET /healthz` from `source` to `addr` (the raw client panics past 30 s: the other
/// address was not answered while the trickling connections were held).
async fn healthz_from(source: &str, addr: &str) -> String {
    raw::request_from(source, addr.parse().unwrap(), healthz(addr).as_bytes()).await
}

/// nginx's limit per address in contrib/nginx/watasu-proxy.conf.
const NGINX_PER_CLIENT: usize = 64;

async fn hundreds_of_trickling_connections_from_one_address_leave_another_address_answered(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.max_connections = 256;
        (s.header_timeout, s.small_body_timeout, s.body_timeout, s.idle_timeout) = (HOUR, HOUR, HOUR, HOUR);
    })
    .await;
    let share = app.state.config.per_client_connections() as usize;
    assert!(share < 256 && TRICKLING > 256, "the test needs a trickle past the cap and a share below it");
    let addr = app.addr.to_string();

    let trickling = trickle("127.0.0.2", &addr).await;
    // Connections are accepted in order: this one only after every trickling one was placed.
    let answer = healthz_from("127.0.1.3", &addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let (_, answered_429) = wait_for_refusals(&trickling, |ended, _| ended >= TRICKLING - share).await;
    assert!(answered_429 > 0, "no connection over the share was told why");
    assert_eq!(still_open(&trickling), share, "the trickling client's share was not held throughout");
}

async fn through_the_nginx_files_one_trickling_address_leaves_another_answered(backend: Backend) {
    // A cap the trickling sign-in forms alone would fill, were nginx not limiting each address.
    let app = TestApp::spawn_with(backend, |s| {
        s.max_connections = 100;
        s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        (s.header_timeout, s.small_body_timeout, s.body_timeout, s.idle_timeout) = (HOUR, HOUR, HOUR, HOUR);
    })
    .await;
    let nginx = Nginx::start(&app.addr.to_string(), "100m");
    let trickling = trickle("127.0.0.2", &nginx.addr).await;
    let answer = healthz_from("127.0.1.3", &nginx.addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // nginx counts a connection once its headers are in: the forms past its limit are told 429
    // (the half headers wait at nginx and never reach the app).
    let forms_refused = TRICKLING / 2 - NGINX_PER_CLIENT;
    let (_, answered_429) = wait_for_refusals(&trickling, |_, answered| answered >= forms_refused).await;
    assert_eq!(answered_429, forms_refused, "{}", nginx.error_log());
}

both_backends!(
    hundreds_of_trickling_connections_from_one_address_leave_another_address_answered,
    through_the_nginx_files_one_trickling_address_leaves_another_answered
);
