//! The processes a report run starts (the release `watasu` binary and nginx), each on 127.0.0.1 and
//! stopped by its PID, and their memory as /proc shows it.

use std::{
    fs::File,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// The secret key every server of a run gets, so the bench can issue codes the server accepts.
pub const SECRET_KEY: &str = "6b656e63686d61726b2d6b65792d6f662d7761746173752d72756e2d30303031";
/// The file key every watasu process of a run gets, so the bench can seal files the servers open.
pub const FILE_KEY: &str = "66696c652d6b65792d6f662d7468652d7761746173752d62656e63682d303031";

/// `program` as a command run inside the network namespace `netns` (`ip netns exec`, which execs
/// it: the child's PID is the program's), or here when there is none.
pub fn command_in(netns: Option<&str>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match netns {
        Some(ns) => {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", ns]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `watasu serve` process.
pub struct Watasu {
    child: Child,
    pub base: String,
    pub started: Instant,
    command: Command,
    log: File,
}

fn spawn(command: &mut Command, log: &File) -> Child {
    command.stdout(log.try_clone().unwrap()).stderr(log.try_clone().unwrap()).spawn().expect("starting watasu")
}

impl Watasu {
    /// Starts the release binary on a free port; `extra` are more `serve` flags. It logs at the
    /// default level (as in production) into `log`.
    pub fn spawn(data_dir: &Path, database_url: &str, extra: &[&str], log: &Path) -> Self {
        Self::spawn_with_env(data_dir, database_url, extra, &[], log)
    }

    /// The same with more environment variables (the object store's `AWS_*`).
    pub fn spawn_with_env(
        data_dir: &Path,
        database_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Self {
        let addr = format!("127.0.0.1:{}", free_port());
        // Lets the login driver give each sign-in its own client address (rate limits).
        Self::start(
            command_in(None, env!("CARGO_BIN_EXE_watasu")),
            &addr,
            "127.0.0.1",
            data_dir,
            database_url,
            extra,
            env,
            log,
        )
    }

    /// The release binary inside the network namespace `netns` on `addr` (`host:port` there),
    /// trusting `proxy` (the address a proxy beside it connects from). Nothing on this machine
    /// reaches it: readiness is the caller's to check from the other side of the link.
    pub fn spawn_in(netns: &str, addr: &str, proxy: &str, data_dir: &Path, database_url: &str, log: &Path) -> Self {
        let command = command_in(Some(netns), env!("CARGO_BIN_EXE_watasu"));
        Self::start(command, addr, proxy, data_dir, database_url, &[], &[], log)
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        mut command: Command,
        addr: &str,
        proxy: &str,
        data_dir: &Path,
        database_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Self {
        command
            .args(["serve", "--listen", addr, "--data-dir", data_dir.to_str().unwrap()])
            .args(["--database-url", database_url, "--secret-key", SECRET_KEY])
            .args(["--trusted-proxies", proxy, "--max-upload-bytes", "3G"])
            .args(extra)
            .env("WATASU_FILE_KEY", FILE_KEY)
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        let log = File::options().create(true).append(true).open(log).expect("opening the server log");
        let started = Instant::now();
        Self { child: spawn(&mut command, &log), base: format!("http://{addr}"), started, command, log }
    }

    /// SIGKILL, as a crash or an OOM kill ends it, then the same command again (same address,
    /// data and settings); `wait_ready` times the restart.
    pub fn kill_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.started = Instant::now();
        self.child = spawn(&mut self.command, &self.log);
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls /readyz until it answers 200; returns the time since the process was started.
    pub async fn wait_ready(&mut self) -> Duration {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let url = format!("{}/readyz", self.base);
        loop {
            if let Ok(response) = client.get(&url).send().await
                && response.status() == 200
            {
                return self.started.elapsed();
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("watasu exited with {status} before it was ready (see its log in target/bench)");
            }
            assert!(self.started.elapsed() < Duration::from_secs(60), "watasu was not ready after 60 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// SIGTERM, then waits for the graceful exit (SIGKILL after 30 s).
    pub fn stop(mut self) {
        stop_child(&mut self.child, "TERM");
    }
}

impl Drop for Watasu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stop_child(child: &mut Child, signal: &str) {
    let _ = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// nginx from the Debian package on 127.0.0.1: serving one folder with sendfile, or proxying to
/// watasu as the README configures it. No access log.
pub struct Nginx {
    child: Child,
    pub port: u16,
}

/// Where a server listens: on 127.0.0.1 here, or on an address inside a network namespace (one
/// side of the emulated link), which only that namespace's processes reach.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub netns: Option<&'static str>,
    pub host: &'static str,
}

impl Place {
    pub const HERE: Self = Self { netns: None, host: "127.0.0.1" };

    /// The HTTP status `url` answers as seen from this place; none when nothing answers.
    pub fn status_of(&self, url: &str) -> Option<u16> {
        let mut command = command_in(self.netns, "curl");
        command.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url]);
        let output = command.stdin(Stdio::null()).output().ok()?;
        String::from_utf8_lossy(&output.stdout).trim().parse().ok().filter(|&code| code != 0)
    }
}

/// The `http` block's part of contrib/nginx/watasu-proxy.conf (the zone its `limit_conn` names).
fn proxy_limits() -> String {
    let limits = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/nginx/watasu-limits.conf");
    format!("include {};", limits.display())
}

impl Nginx {
    /// Serves `root` with sendfile.
    pub fn serving(prefix: &Path, root: &Path) -> Self {
        Self::start(prefix, Place::HERE, "", &format!("root {};\n        location / {{ }}", root.display()))
    }

    /// Serves `root` with sendfile at `place`, and takes any PUT under `/up/` into `root/up/`
    /// (WebDAV), whatever its size: the single transfers watasu's are held against.
    pub fn serving_and_taking(prefix: &Path, root: &Path, place: Place) -> Self {
        let server = format!(
            "root {};\n        client_max_body_size 0;\n        location / {{ }}\n        location /up/ {{ dav_methods PUT; }}",
            root.display()
        );
        Self::start(prefix, place, "", &server)
    }

    /// Balances round-robin over `upstreams` (`host:port` each) with contrib/nginx/watasu-proxy.conf.
    pub fn balancing(prefix: &Path, upstreams: &[String]) -> Self {
        let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/nginx/watasu-proxy.conf");
        let servers: String = upstreams.iter().map(|u| format!("server {u}; ")).collect();
        Self::start(
            prefix,
            Place::HERE,
            &format!("{}\n    upstream watasu {{ {servers}}}", proxy_limits()),
            &format!("location / {{ proxy_pass http://watasu; include {}; }}", conf.display()),
        )
    }

    /// Proxies to `upstream` (`host:port`) with contrib/nginx/watasu-proxy.conf, refusing request
    /// bodies over `max_body` (a Cloudflare-like cap).
    pub fn proxying(prefix: &Path, upstream: &str, max_body: &str) -> Self {
        Self::proxying_at(prefix, Place::HERE, upstream, max_body)
    }

    /// The same at `place`.
    pub fn proxying_at(prefix: &Path, place: Place, upstream: &str, max_body: &str) -> Self {
        let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/nginx/watasu-proxy.conf");
        Self::start(
            prefix,
            place,
            &proxy_limits(),
            &format!(
                "client_max_body_size {max_body};\n        location / {{ proxy_pass http://{upstream}; include {}; }}",
                conf.display()
            ),
        )
    }

    /// nginx at `place` with `http` more lines of the http block and `server` those of its one
    /// server.
    fn start(prefix: &Path, place: Place, http: &str, server: &str) -> Self {
        let binary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("nginx"));
        std::fs::create_dir_all(prefix.join("tmp")).unwrap();
        let port = free_port();
        let (p, host) = (prefix.display(), place.host);
        // As root the workers would run as `nobody`, who may not read watasu's private data folder.
        let user = if is_root() { "user root;" } else { "" };
        let config = format!(
            "{user}
worker_processes 1;
daemon off;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    default_type application/octet-stream;
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
    {http}
    server {{
        listen {host}:{port};
        {server}
    }}
}}
"
        );
        let conf = prefix.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = command_in(place.netns, binary)
            .args(["-p", prefix.to_str().unwrap(), "-e", prefix.join("error.log").to_str().unwrap()])
            .args(["-c", conf.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(prefix.join("stderr.log")).unwrap())
            .spawn()
            .expect("starting nginx (apt-get install nginx)");
        let deadline = Instant::now() + Duration::from_secs(10);
        let url = format!("http://{host}:{port}/");
        let up = || match place.netns {
            None => std::net::TcpStream::connect((host, port)).is_ok(),
            Some(_) => place.status_of(&url).is_some(),
        };
        while !up() {
            assert!(Instant::now() < deadline, "nginx did not start: see {}", prefix.join("error.log").display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    /// SIGQUIT: graceful shutdown of the master and its worker.
    pub fn stop(mut self) {
        stop_child(&mut self.child, "QUIT");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// A field of /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
pub fn memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let value = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The CPU time a process has used so far (user and system, all its threads), in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
    // The fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The highest VmRSS of a process, sampled every 20 ms until finished.
pub struct PeakRss {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    /// The peak of the anonymous part alone (heap and stacks; not mapped files' pages).
    anon: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl PeakRss {
    pub fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (peak, anon) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (stopping, highest, highest_anon) = (stop.clone(), peak.clone(), anon.clone());
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                if let Some(rss) = memory_kib(pid, "VmRSS") {
                    highest.fetch_max(rss, Ordering::Relaxed);
                }
                if let Some(rss) = memory_kib(pid, "RssAnon") {
                    highest_anon.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self { stop, peak, anon, thread }
    }

    /// The peak in KiB.
    pub fn finish(self) -> u64 {
        self.finish_with_anon().0
    }

    /// The peak and the anonymous part's peak, in KiB.
    pub fn finish_with_anon(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        (self.peak.load(Ordering::Relaxed), self.anon.load(Ordering::Relaxed))
    }
}
