//! The client's address behind the documented nginx (the contrib/ files): a client that forges
//! `Forwarded` or `X-Forwarded-For` is still known by its own address, so it cannot reset a
//! per-client limit by claiming another one per request.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{nginx::Nginx, process::Server, raw};

fn get_with(addr: &str, path: &str, forged: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{forged}\r\nConnection: close\r\n\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_the_documented_nginx_a_forged_forwarded_or_x_forwarded_for_changes_no_client_address() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--trusted-proxies", "127.0.0.1/32"]);
    let nginx = Nginx::start(&server.addr, "100m");
    let addr = nginx.addr.parse().unwrap();
    for (source, forged) in
        [("127.0.0.5", "Forwarded: for=198.51.100.66"), ("127.0.0.6", "X-Forwarded-For: 198.51.100.77")]
    {
        let answer = raw::request_from(source, addr, get_with(&nginx.addr, "/healthz", forged).as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    server.wait_for_log("client=\"127.0.0.6\"", Duration::from_secs(10));
    let log = server.log();
    assert!(log.contains("client=\"127.0.0.5\""), "{log}");
    assert!(!log.contains("198.51.100.66") && !log.contains("198.51.100.77"), "a forged address was believed:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nginx_file_drops_a_clients_forwarded_header_and_appends_its_address_to_x_forwarded_for() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nginx = Nginx::start(&upstream.local_addr().unwrap().to_string(), "100m");
    let request = get_with(&nginx.addr, "/", "Forwarded: for=198.51.100.66\r\nX-Forwarded-For: 198.51.100.77");
    let nginx_addr = nginx.addr.parse().unwrap();
    let client = tokio::spawn(async move { raw::request_from("127.0.0.5", nginx_addr, request.as_bytes()).await });
    let (mut passed_on, _) = tokio::time::timeout(Duration::from_secs(30), upstream.accept()).await.unwrap().unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(passed_on.read(&mut byte).await.unwrap(), 1, "nginx closed mid-request");
        head.push(byte[0]);
    }
    passed_on.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await.unwrap();
    let answer = client.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(!head.contains("\nforwarded:"), "the client's Forwarded reached the app:\n{head}");
    assert!(head.contains("\nx-forwarded-for: 198.51.100.77, 127.0.0.5\r\n"), "{head}");
}
