//! The listener's limits, against the real socket: clients that keep the server waiting
//! (half a request line, an idle keep-alive, a body that stops) are disconnected after their
//! timeout, a body that keeps coming is not, and connections past the cap wait.

use std::time::{Duration, Instant};

use tokio::{io::AsyncWriteExt, net::TcpStream};

use crate::{
    both_backends,
    support::{TestApp, raw},
};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_secs(1);

/// An app whose transport limits are all long except the ones `adjust` shortens.
async fn app_with(backend: crate::support::Backend, adjust: impl FnOnce(&mut watasu::config::Settings)) -> TestApp {
    TestApp::spawn_with(backend, |s| {
        (s.header_timeout, s.idle_timeout, s.body_timeout) = (LONG, LONG, LONG);
        adjust(s);
    })
    .await
}

fn healthz(addr: std::net::SocketAddr) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n")
}

/// The head of a same-origin form post whose body is `length` bytes.
fn form_post_head(addr: std::net::SocketAddr, length: usize) -> String {
    format!(
        "POST /login HTTP/1.1\r\nHost: {addr}\r\nSec-Fetch-Site: same-origin\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

both_backends! {
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

    async fn a_request_body_that_keeps_coming_is_never_cut_however_long_it_takes(backend: Backend) {
        let app = app_with(backend, |s| s.body_timeout = SHORT).await;
        let body = b"csrf_token=x&email=someone%40example.test&password=not-the-password";
        let at_once = raw::request(app.addr, &[form_post_head(app.addr, body.len()).as_bytes(), body].concat()).await;
        let status = at_once.lines().next().unwrap().to_owned();

        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        stream.write_all(form_post_head(app.addr, body.len()).as_bytes()).await.unwrap();
        let started = Instant::now();
        // Four pieces 600 ms apart: the whole body takes longer than the body timeout, no gap does.
        for piece in body.chunks(body.len().div_ceil(4)) {
            tokio::time::sleep(Duration::from_millis(600)).await;
            stream.write_all(piece).await.unwrap();
        }
        let answer = raw::read_response(&mut stream).await;
        assert!(started.elapsed() > SHORT, "the body took less than the timeout; the test proves nothing");
        assert_eq!(answer.lines().next().unwrap(), status, "{answer}");
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
        for _ in 0..2 {
            let mut stream = TcpStream::connect(app.addr).await.unwrap();
            stream.write_all(healthz(app.addr).as_bytes()).await.unwrap();
            assert!(raw::read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
            held.push(stream);
        }
        let third = tokio::spawn({
            let addr = app.addr;
            async move {
                let answer = raw::get(addr, "/healthz").await;
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
}
