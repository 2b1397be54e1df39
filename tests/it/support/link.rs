//! A real emulated network link (scripts/netlink: two network namespaces joined by
//! tools/slowlink, with a round trip, random loss and a rate), for measuring what a client does
//! over a real round trip. Needs root; a test without it fails with that reason, never skips.
//!
//! The servers stay in this process's namespace, where the database and mail relay are: a
//! [`Link::port_to`] is a socket listening inside the server's namespace that relays each
//! connection to an address here, as a reverse proxy on the server would. The client's own TCP
//! connection crosses the link; the relay's second hop is loopback.

use std::{
    fs::File,
    os::fd::AsRawFd,
    path::Path,
    process::{Command, Stdio},
};

use tokio::{
    io::copy_bidirectional_with_sizes,
    net::{TcpListener, TcpStream},
    sync::{Mutex, MutexGuard},
};

pub const CLIENT_NS: &str = "wts-client";
const SERVER_NS: &str = "wts-server";
const SERVER_ADDR: &str = "10.77.0.2";
/// The relay's buffers: large enough that copying is no limit at the link's rate.
const RELAY_BUFFER: usize = 256 * 1024;

/// The namespaces have fixed names: one link at a time in this process.
static ONE_LINK: Mutex<()> = Mutex::const_new(());

/// What the link does to every packet.
pub struct Shape {
    pub rtt_ms: u64,
    /// The share of packets lost at random, each way.
    pub loss: f64,
    pub rate_mbit: u64,
    /// TCP's congestion control on the link's route, both ends.
    pub cc: &'static str,
}

/// The link, up until dropped (then taken down with whatever still runs in its namespaces).
pub struct Link {
    _one: MutexGuard<'static, ()>,
}

impl Link {
    pub async fn up(shape: &Shape) -> Self {
        assert!(
            super::pg::is_root(),
            "the link needs root (network namespaces and TUN devices): run the tests as root, as CI does"
        );
        let one = ONE_LINK.lock().await;
        let status = tokio::task::block_in_place(|| {
            netlink()
                .args(["up", "--rtt-ms", &shape.rtt_ms.to_string(), "--loss", &shape.loss.to_string()])
                .args(["--rate-mbit", &shape.rate_mbit.to_string(), "--cc", shape.cc])
                .stdout(Stdio::null())
                .status()
                .expect("running scripts/netlink")
        });
        assert!(status.success(), "scripts/netlink up failed");
        Self { _one: one }
    }

    /// An address on the server's side of the link (`10.77.0.2:port`) whose connections are
    /// relayed to `target` in this namespace.
    pub async fn port_to(&self, target: &str) -> String {
        let listener = tokio::task::block_in_place(listen_in_server_namespace);
        listener.set_nonblocking(true).unwrap();
        let listener = TcpListener::from_std(listener).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let target = target.to_owned();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&target).await else { return };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let _ = copy_bidirectional_with_sizes(&mut client, &mut server, RELAY_BUFFER, RELAY_BUFFER).await;
                });
            }
        });
        addr
    }

    /// `program`, to be run in the client's namespace.
    pub fn client_command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", CLIENT_NS, program]);
        command
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = netlink().arg("down").stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

fn netlink() -> Command {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/netlink"))
}

/// A socket listening on the server's address, made on a thread that moved into the server's
/// namespace for it: a socket stays in the namespace it was made in, and the thread ends there.
fn listen_in_server_namespace() -> std::net::TcpListener {
    std::thread::spawn(|| {
        let namespace = File::open(format!("/run/netns/{SERVER_NS}")).expect("opening the server's namespace");
        // SAFETY: setns only changes this thread's network namespace, given a valid descriptor
        // of one; the thread ends once the socket is made.
        let entered = unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
        std::net::TcpListener::bind(format!("{SERVER_ADDR}:0")).expect("listening on the server's side")
    })
    .join()
    .expect("listening in the server's namespace")
}
