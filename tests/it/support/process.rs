//! The real `watasu` binary as a child process, for what only a process shows: exit codes,
//! signals and the log it writes.

use std::{
    io::{BufRead, BufReader, Write},
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
    run_watasu_fed(args, envs, b"")
}

/// The same with `input` on its standard input.
pub fn run_watasu_fed(args: &[&str], envs: &[(&str, &str)], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(args)
        .envs(envs.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running watasu");
    // Written whole before waiting: the command reads its input before it writes much.
    let _ = child.stdin.take().expect("a piped stdin").write_all(input);
    let output = child.wait_with_output().expect("running watasu");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs the shell command `cleanup` once this test process has exited (a server started for the
/// tests is stopped and its files removed even when a test panics), in a shell started by `shell`:
/// `Command::new("sh")`, or `sh` as another user.
pub fn clean_up_after_exit(mut shell: Command, cleanup: &str) {
    let script = format!("while [ -d /proc/{pid} ]; do sleep 1; done; {cleanup}", pid = std::process::id());
    shell.args(["-c", &script]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // The watchdog outlives this process on purpose; nobody waits for it.
    #[allow(clippy::zombie_processes)]
    shell.spawn().expect("starting a clean-up watchdog");
}

/// Waits until something accepts connections on `addr`; panics after `timeout` with `what`
/// (called only then, so it may read a log).
pub fn wait_until_listening(addr: &str, timeout: Duration, what: impl FnOnce() -> String) {
    let started = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(started.elapsed() < timeout, "{} never listened on {addr}", what());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An address where nothing listens, nor will while the suite runs: a free port of 127.0.0.254,
/// which no server of the suite binds (they bind 127.0.0.1), so a connection there is refused at
/// once. A free port of 127.0.0.1 could be taken by another test's server in the meantime.
pub fn unanswered_local_addr() -> String {
    let port = TcpListener::bind("127.0.0.254:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.254:{port}")
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
