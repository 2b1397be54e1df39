//! The one chromedriver of this test process: found on PATH, started on a free 127.0.0.1 port on
//! first use, and stopped with its browsers by a watchdog once the test process has exited.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

const INSTALL_HINT: &str = "apt-get install chromium chromium-driver";

/// The chromedriver shared by every browser of this test process.
pub(super) struct Driver {
    pub(super) url: String,
    pub(super) chromium: PathBuf,
    dir: PathBuf,
    pub(super) log: PathBuf,
    profiles: AtomicUsize,
}

impl Driver {
    pub(super) fn new_profile_dir(&self) -> PathBuf {
        let n = self.profiles.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("profile-{n}"));
        std::fs::create_dir_all(&dir).expect("creating a Chromium profile directory");
        dir
    }
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

pub(super) fn driver() -> &'static Driver {
    DRIVER.get_or_init(start_driver)
}

fn start_driver() -> Driver {
    let chromium = find_program(&["chromium", "chromium-browser", "google-chrome"])
        .unwrap_or_else(|| panic!("Chromium was not found on PATH (chromium). Install it: {INSTALL_HINT}"));
    let chromedriver = find_program(&["chromedriver"])
        .unwrap_or_else(|| panic!("chromedriver was not found on PATH. Install it: {INSTALL_HINT}"));
    let dir = tempfile::Builder::new().prefix("watasu-chrome-").tempdir().expect("temp dir").keep();
    let log = dir.join("chromedriver.log");
    let port = free_port();
    // Its own process group, so the watchdog can stop it and every Chromium it started.
    use std::os::unix::process::CommandExt;
    // The watchdog below waits for it; this process never does.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {} failed: {e}. Install it: {INSTALL_HINT}", chromedriver.display()));
    spawn_watchdog(child.id(), &dir);
    let url = format!("http://127.0.0.1:{port}/");
    wait_until_ready(port, &log);
    Driver { url, chromium, dir, log, profiles: AtomicUsize::new(0) }
}

/// Stops chromedriver (and its browsers) and removes the profiles once this process has exited.
fn spawn_watchdog(driver_pid: u32, dir: &Path) {
    let cleanup = format!(
        "kill -TERM -{driver_pid} 2>/dev/null; sleep 1; kill -KILL -{driver_pid} 2>/dev/null; rm -rf {dir}",
        dir = dir.display(),
    );
    crate::support::process::clean_up_after_exit(Command::new("sh"), &cleanup);
}

/// Waits until chromedriver's `/status` says it is ready.
fn wait_until_ready(port: u16, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if driver_ready(port).unwrap_or(false) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "chromedriver did not answer on 127.0.0.1:{port}/status within 20 s; its log: {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether chromedriver's `/status` says it is ready. It keeps HTTP/1.1 connections open (and
/// refuses HTTP/1.0), so read only until the answer is in.
fn driver_ready(port: u16) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    write!(stream, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")?;
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(false);
        }
        response.extend_from_slice(&buf[..n]);
        let text: String = String::from_utf8_lossy(&response).split_whitespace().collect();
        if text.contains("\"ready\":true") {
            return Ok(true);
        }
    }
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    names.iter().find_map(|name| dirs.iter().map(|dir| dir.join(name)).find(|candidate| candidate.is_file()))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
