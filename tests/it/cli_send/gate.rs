//! A TCP proxy on 127.0.0.1 in front of the app that holds one upload midway: the first
//! connection to carry more than `hold_after` bytes towards the app is no longer read from the
//! client, so the app keeps what arrived and the test chooses what happens next (a kill). Later
//! connections pass freely, to whatever listens on the app's address then; a connection whose
//! app side ends (or that finds no app) is closed on the client's side too, as a lost connection.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

pub struct GateProxy {
    pub addr: std::net::SocketAddr,
}

impl GateProxy {
    pub async fn start(app: String, hold_after: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (app, held) = (app.clone(), held.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&app).await {
                        relay(client, server, &held, hold_after).await;
                    }
                });
            }
        });
        Self { addr }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Copies both ways until the app's side ends.
async fn relay(client: TcpStream, server: TcpStream, held: &AtomicBool, hold_after: u64) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let towards_app = async {
        let mut passed = 0u64;
        let mut buf = vec![0; 64 * 1024];
        while let Ok(n @ 1..) = client_read.read(&mut buf).await {
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
            passed += n as u64;
            if passed > hold_after && !held.swap(true, Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
        }
        let _ = server_write.shutdown().await;
        std::future::pending::<()>().await
    };
    let towards_client = async {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    };
    tokio::select! {
        () = towards_client => {}
        () = towards_app => {}
    }
}
