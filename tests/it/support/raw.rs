//! A raw TCP client, for requests no HTTP client library would send as written (backslashes in
//! the path, half a request line, a body that stops).

use std::{net::SocketAddr, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Sends `request` as written and reads until the server closes the connection.
pub async fn request(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .expect("the server answered and closed within 30 s")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A `GET` of `path` exactly as given, closing after the answer.
pub async fn get(addr: SocketAddr, path: &str) -> String {
    request(addr, format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).await
}
