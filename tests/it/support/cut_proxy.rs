//! A tiny TCP proxy on 127.0.0.1 in front of the app that cuts the first download: the first
//! connection carrying a `GET /s/…/file` is closed once it has passed `cut_after` bytes of the
//! answer. Every request head it forwards is kept, so a test can see what the browser asked for
//! after the cut.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// The proxy's shared state: whether the cut was made, and the request heads seen.
#[derive(Default)]
struct Seen {
    cut: AtomicBool,
    heads: Mutex<Vec<String>>,
}

pub struct CutProxy {
    pub addr: SocketAddr,
    listener: Option<TcpListener>,
    seen: Arc<Seen>,
}

impl CutProxy {
    /// Binds the proxy's port (so the app can be told its public address) without forwarding yet.
    pub async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self { addr: listener.local_addr().unwrap(), listener: Some(listener), seen: Arc::default() }
    }

    /// Starts forwarding to `app`, cutting the first file download after `cut_after` bytes.
    pub fn forward_to(&mut self, app: SocketAddr, cut_after: usize) {
        let listener = self.listener.take().expect("forwarding already");
        let seen = self.seen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(app).await {
                        relay(client, server, seen, cut_after).await;
                    }
                });
            }
        });
    }

    /// Whether the cut was made.
    pub fn cut_made(&self) -> bool {
        self.seen.cut.load(Ordering::SeqCst)
    }

    /// How many requests used `method`.
    pub fn requests_with(&self, method: &str) -> usize {
        self.seen.heads.lock().unwrap().iter().filter(|h| h.starts_with(&format!("{method} "))).count()
    }

    /// Every request head for the file, in the order they arrived.
    pub fn file_requests(&self) -> Vec<String> {
        let heads = self.seen.heads.lock().unwrap();
        heads.iter().filter(|h| h.starts_with("GET /s/") && h.contains("/file ")).cloned().collect()
    }
}

/// More than any request head is long.
const HEAD_ROOM: usize = 64 * 1024;

async fn relay(client: TcpStream, server: TcpStream, seen: Arc<Seen>, cut_after: usize) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set once this connection has carried the one file request to cut.
    let cutting = Arc::new(AtomicBool::new(false));
    let upstream = {
        let (seen, cutting) = (seen.clone(), cutting.clone());
        async move {
            let mut buffer = vec![0u8; 64 * 1024];
            let mut pending = Vec::new();
            while let Ok(read) = client_read.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                pending.extend_from_slice(&buffer[..read]);
                for head in take_heads(&mut pending) {
                    let is_file = head.starts_with("GET /s/") && head.contains("/file ");
                    if is_file && !seen.cut.swap(true, Ordering::SeqCst) {
                        cutting.store(true, Ordering::SeqCst);
                    }
                    seen.heads.lock().unwrap().push(head);
                }
                // An upload's body holds no head: keep only what a head could still be part of, so
                // the search stays linear however large the body.
                let excess = pending.len().saturating_sub(HEAD_ROOM);
                pending.drain(..excess);
                if server_write.write_all(&buffer[..read]).await.is_err() {
                    break;
                }
            }
        }
    };
    let downstream = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut passed = 0usize;
        while let Ok(read) = server_read.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            let chunk = &buffer[..read];
            if cutting.load(Ordering::SeqCst) {
                let room = cut_after.saturating_sub(passed);
                if chunk.len() >= room {
                    let _ = client_write.write_all(&chunk[..room]).await;
                    return;
                }
                passed += chunk.len();
            }
            if client_write.write_all(chunk).await.is_err() {
                break;
            }
        }
    };
    // Whichever side ends first ends the connection (the cut drops both halves).
    tokio::select! {
        () = upstream => {}
        () = downstream => {}
    }
}

/// Request heads completed in `pending` (up to a blank line), removed from it. A request body
/// (the download form's few bytes) stays behind and is skipped by the search for the next head.
fn take_heads(pending: &mut Vec<u8>) -> Vec<String> {
    let mut heads = Vec::new();
    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
        let text = String::from_utf8_lossy(&pending[..end]).into_owned();
        pending.drain(..end + 4);
        // Anything before the request line is a previous request's body.
        let start = ["GET ", "POST ", "HEAD ", "PATCH "].iter().filter_map(|m| text.find(m)).min().unwrap_or(0);
        heads.push(text[start..].to_owned());
    }
    heads
}
