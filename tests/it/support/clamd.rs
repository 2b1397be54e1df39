//! The real clamd from Debian (`clamav-daemon`), on 127.0.0.1 with its own configuration and a
//! signature database that holds one line (it listens on a Unix socket too): the MD5 and size of the 68-byte EICAR test file
//! (freshclam cannot reach its mirrors here, and one signature proves detection). Ready means it
//! answered `PING` with `PONG`. Killed by its PID when dropped; a clamd shared by several tests
//! is killed by a watchdog once the test process has exited.

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use super::process::{clean_up_after_exit, free_local_addr};

/// The standard EICAR test file: harmless, and found by every scanner.
pub const EICAR: &[u8] = br"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";
/// Its signature: `md5sum` and size of [`EICAR`], and the name clamd reports.
const EICAR_HDB: &str = "44d88612fea8a8f36de82e1278abb02f:68:Eicar-Test-Signature\n";
/// The name clamd reports for a match of a signature outside its official databases.
pub const EICAR_NAME: &str = "Eicar-Test-Signature";
/// The longest stream the clamds here take: a file over it is "too large".
pub const STREAM_MAX: usize = 100 * 1024;

static SHARED: OnceLock<Clamd> = OnceLock::new();

/// One clamd for the tests that leave it running.
pub fn shared() -> &'static Clamd {
    SHARED.get_or_init(|| {
        let mut clamd = Clamd::start();
        let pid = clamd.child.take().expect("a running clamd").id();
        clean_up_after_exit(Command::new("sh"), &format!("kill {pid}; rm -rf {}", clamd.dir.path().display()));
        clamd
    })
}

pub struct Clamd {
    child: Option<Child>,
    pub addr: String,
    dir: tempfile::TempDir,
}

fn binary() -> PathBuf {
    ["/usr/sbin/clamd", "/usr/bin/clamd"].iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or_else(|| {
        panic!("clamd is not installed: `apt-get install clamav-daemon` (scripts/test installs it when run as root)")
    })
}

impl Clamd {
    /// clamd on a free local port, answering once ready.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new().prefix("watasu-clamd-").tempdir().unwrap();
        let db = dir.path().join("db");
        std::fs::create_dir(&db).unwrap();
        std::fs::write(db.join("eicar.hdb"), EICAR_HDB).unwrap();
        let addr = free_local_addr();
        let port = addr.rsplit_once(':').unwrap().1;
        let config = format!(
            "Foreground yes\nTCPSocket {port}\nTCPAddr 127.0.0.1\nLocalSocket {socket}\nDatabaseDirectory {db}\n\
             LogFile {log}\nStreamMaxLength {STREAM_MAX}\nSelfCheck 0\n",
            socket = dir.path().join("clamd.sock").display(),
            db = db.display(),
            log = dir.path().join("clamd.log").display(),
        );
        std::fs::write(dir.path().join("clamd.conf"), config).unwrap();
        let mut clamd = Self { child: None, addr, dir };
        clamd.start_again();
        clamd
    }

    /// `tcp://HOST:PORT`, as WATASU_CLAMD takes it.
    pub fn url(&self) -> String {
        format!("tcp://{}", self.addr)
    }

    /// The path of its Unix socket, as WATASU_CLAMD takes it too.
    pub fn socket(&self) -> String {
        self.dir.path().join("clamd.sock").display().to_string()
    }

    /// Stops clamd (by its PID) and waits until it is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts clamd again on its port and waits until it answers PING.
    pub fn start_again(&mut self) {
        let conf = self.dir.path().join("clamd.conf");
        let child = Command::new(binary())
            .args(["-c", conf.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting clamd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.pongs() {
            assert!(Instant::now() < deadline, "clamd never answered PING:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether clamd answers `PING` with `PONG` now.
    fn pongs(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.addr) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let mut answer = Vec::new();
        stream.write_all(b"zPING\0").is_ok() && stream.read_to_end(&mut answer).is_ok() && answer == b"PONG\0"
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("clamd.log")).unwrap_or_default()
    }
}

impl Drop for Clamd {
    fn drop(&mut self) {
        self.stop();
    }
}
