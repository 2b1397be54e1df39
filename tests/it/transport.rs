//! The listener's limits, against the real socket: clients that keep the server waiting
//! (half a request line, an idle keep-alive, a body that stops, a form that trickles, answers
//! nobody reads) are disconnected after their timeout, an upload that keeps coming is not, and
//! connections past the cap wait. One client's share of the cap: `crowding.rs`.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::{
    both_backends,
    support::{Backend, Page, TestApp, raw},
    uploads::Tus,
};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_secs(1);

/// An app whose transport limits are all long except the ones `adjust` shortens.
async fn app_with(backend: crate::support::Backend, adjust: impl FnOnce(&mut watasu::config::Settings)) -> TestApp {
    TestApp::spawn_with(backend, |s| {
        (s.header_timeout, s.idle_timeout, s.body_timeout, s.small_body_timeout) = (LONG, LONG, LONG, LONG);
        adjust(s);
    })
    .await
}

fn healthz(addr: std::net::SocketAddr) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n")
}

fn healthz_then_close(addr: std::net::SocketAddr) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

/// The head of a same-origin form post whose body is `length` bytes.
fn form_post_head(addr: std::net::SocketAddr, length: usize) -> String {
    format!(
        "POST /login HTTP/1.1\r\nHost: {addr}\r\nSec-Fetch-Site: same-origin\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

async fn a_client_that_sends_half_a_request_line_is_disconnected_after_the_header_timeout(backend: Backend) {
    let app = app_with(backend, |s| s.header_timeout = SHORT).await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(b"GET /log").await.unwrap();
    let sent = Instant::now();
    let closed = raw::wait_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed - sent >= SHORT - Duration::from_millis(100), "closed before the timeout");
}

async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(backend: Backend) {
    let app = app_with(backend, |s| s.idle_timeout = SHORT).await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(healthz(app.addr).as_bytes()).await.unwrap();
    assert!(raw::read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    let closed = raw::wait_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed - answered >= SHORT - Duration::from_millis(100), "closed before the timeout");
}

async fn a_request_body_that_stops_sending_is_cut_after_the_body_timeout(backend: Backend) {
    let app = app_with(backend, |s| s.body_timeout = SHORT).await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(form_post_head(app.addr, 100).as_bytes()).await.unwrap();
    stream.write_all(b"email=a%40example.test").await.unwrap();
    raw::wait_closed(&mut stream, Duration::from_secs(10)).await;
}

async fn a_small_body_that_keeps_coming_is_cut_when_not_whole_within_the_small_body_timeout(backend: Backend) {
    let app = app_with(backend, |s| s.small_body_timeout = SHORT).await;
    // A byte every 300 ms: no gap comes near the (long) body timeout, and the whole body
    // would take 30 s, far past the short small-body timeout.
    let length = 100;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(form_post_head(app.addr, length).as_bytes()).await.unwrap();
    let started = Instant::now();
    let (mut sent, mut answer) = (0, Vec::new());
    while sent < length {
        if stream.write_all(b"x").await.is_err() {
            break;
        }
        sent += 1;
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(Duration::from_millis(300), stream.read(&mut buf)).await {
            Err(_) => continue,
            Ok(Ok(read)) => answer.extend_from_slice(&buf[..read]),
            Ok(Err(_)) => {}
        }
        break;
    }
    assert!(sent < length, "the whole trickled body was taken: {}", String::from_utf8_lossy(&answer));
    assert!(started.elapsed() >= SHORT - Duration::from_millis(100), "cut before the small-body timeout");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 4"), "{answer}");
}

async fn an_upload_that_keeps_coming_is_never_cut_however_long_it_takes(backend: Backend) {
    let app = app_with(backend, |s| s.small_body_timeout = SHORT).await;
    let tus = Tus::sender(&app, "slow-phone@example.test").await;
    let piece = watasu::web::middleware::FORM_BODY_LIMIT;
    let content = crate::uploads::pattern(4 * piece);
    let path = tus.create(content.len() as u64).await;
    // Four pieces 600 ms apart: the whole body takes longer than the small-body timeout,
    // announced as more than a form, and no gap comes near the body timeout.
    let pieces: Vec<bytes::Bytes> = content.chunks(piece).map(bytes::Bytes::copy_from_slice).collect();
    let slow = futures_util::stream::iter(pieces).then(|piece| async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok::<_, std::io::Error>(piece)
    });
    let started = Instant::now();
    let request = tus
        .request(reqwest::Method::PATCH, &path)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .header("Content-Length", content.len().to_string())
        .body(reqwest::Body::wrap_stream(slow));
    let page = Page::read(request.send().await.unwrap()).await;
    assert!(started.elapsed() > SHORT, "the upload took less than the small-body timeout; the test proves nothing");
    assert_eq!(page.status, 204, "{}", page.body);
    assert_eq!(tus.offset(&path).await, content.len() as u64);
}

async fn a_client_that_reads_nothing_of_its_answers_is_disconnected_after_the_body_timeout(backend: Backend) {
    // One slot: the next client is served only once the one that stopped reading is gone.
    let app = app_with(backend, |s| {
        s.body_timeout = SHORT;
        s.max_connections = 1;
    })
    .await;
    let mut hoarder = raw::connect_from("127.0.0.2", app.addr).await;
    // Megabytes of answers asked for at once, none read: they fill the socket buffers.
    let ask = format!("GET /static/any/tus.min.js HTTP/1.1\r\nHost: {}\r\n\r\n", app.addr).repeat(300);
    hoarder.write_all(ask.as_bytes()).await.unwrap();
    let next = raw::request_from("127.0.1.3", app.addr, healthz_then_close(app.addr).as_bytes()).await;
    assert!(next.starts_with("HTTP/1.1 200"), "{next}");
    raw::wait_closed(&mut hoarder, Duration::from_secs(30)).await;
}

async fn a_connection_over_the_cap_waits_until_another_one_closes(backend: Backend) {
    let app = app_with(backend, |s| {
        s.max_connections = 2;
        s.idle_timeout = SHORT;
    })
    .await;
    // The held connections' idle timers start after this: none can close before it + SHORT.
    let before_held = Instant::now();
    let mut held = Vec::new();
    // Each from a network of its own: one network may hold only its share of the cap.
    for source in ["127.0.2.2", "127.0.3.2"] {
        let mut stream = raw::connect_from(source, app.addr).await;
        stream.write_all(healthz(app.addr).as_bytes()).await.unwrap();
        assert!(raw::read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
        held.push(stream);
    }
    let third = tokio::spawn({
        let addr = app.addr;
        async move {
            let answer = raw::request_from("127.0.4.2", addr, healthz_then_close(addr).as_bytes()).await;
            (answer, Instant::now())
        }
    });
    for stream in &mut held {
        raw::wait_closed(stream, Duration::from_secs(10)).await;
    }
    let (answer, answered) = third.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Timestamps taken by this client after each close would race the third's answer; the
    // server's own idle deadline is the bound that holds.
    assert!(answered >= before_held + SHORT, "the third connection was served while two were open");
}

both_backends!(
    a_client_that_sends_half_a_request_line_is_disconnected_after_the_header_timeout,
    an_idle_keep_alive_connection_is_closed_after_the_idle_timeout,
    a_request_body_that_stops_sending_is_cut_after_the_body_timeout,
    a_small_body_that_keeps_coming_is_cut_when_not_whole_within_the_small_body_timeout,
    an_upload_that_keeps_coming_is_never_cut_however_long_it_takes,
    a_client_that_reads_nothing_of_its_answers_is_disconnected_after_the_body_timeout,
    a_connection_over_the_cap_waits_until_another_one_closes
);
