//! A raw TCP client, for requests no HTTP client library would send as written (backslashes in
//! the path, half a request line, a body that stops), from any loopback address.

use std::{net::SocketAddr, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Sends `request` as written and reads until the server closes the connection.
pub async fn request(addr: SocketAddr, request: &[u8]) -> String {
    request_from("127.0.0.1", addr, request).await
}

/// A `GET` of `path` exactly as given, closing after the answer.
pub async fn get(addr: SocketAddr, path: &str) -> String {
    request(addr, format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).await
}

/// Reads one whole response (headers and a Content-Length body) from a kept-alive connection.
pub async fn read_response(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("a response within 30 s")
            .unwrap();
        assert!(read > 0, "the connection closed mid-response: {text}");
        answer.extend_from_slice(&buf[..read]);
    }
}

/// Waits until the server closes the connection (reading and dropping anything it still sends);
/// panics past `limit`.
pub async fn wait_closed(stream: &mut TcpStream, limit: Duration) -> std::time::Instant {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return std::time::Instant::now(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept the connection open for more than {limit:?}"),
        }
    }
}

/// A connection to `addr` from the loopback address `source` (any 127.x.y.z): to the server, a
/// client of its own.
pub async fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(source.parse().unwrap(), 0)).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Sends `request` from `source` and reads until the server closes the connection.
pub async fn request_from(source: &str, addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = connect_from(source, addr).await;
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .expect("the server answered and closed within 30 s")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}
