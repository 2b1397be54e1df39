//! The real `watasu` binary as a child process, for what only a process shows: exit codes,
//! signals and the log it writes.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

pub struct Server {
    pub child: Child,
    pub addr: String,
    log: Arc<Mutex<String>>,
}

/// Runs `watasu` with `args` to completion; returns exit code, stdout and stderr.
pub fn run_watasu(args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(args)
        .envs(envs.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("running watasu");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A `127.0.0.1:port` that nothing listens on right now.
pub fn free_local_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

impl Server {
    /// Starts `watasu serve` on a free port with a fresh data folder and waits until it serves.
    pub fn start(data_dir: &std::path::Path, extra: &[&str]) -> Self {
        Self::start_on(&free_local_addr(), data_dir, extra)
    }

    /// The same on a given address (a restart where a proxy expects it).
    pub fn start_on(addr: &str, data_dir: &std::path::Path, extra: &[&str]) -> Self {
        let addr = addr.to_owned();
        let mut child = Command::new(env!("CARGO_BIN_EXE_watasu"))
            .args(["serve", "--listen", &addr, "--data-dir", data_dir.to_str().unwrap()])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting watasu");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let server = Self { child, addr, log };
        server.wait_for_log("server started", Duration::from_secs(30));
        server
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the log contains `needle`.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) {
        let started = Instant::now();
        while !self.log().contains(needle) {
            assert!(started.elapsed() < timeout, "log never said {needle:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit and returns its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if started.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
