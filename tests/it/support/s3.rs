//! A real S3-compatible server for the tests: `s3s-fs` on 127.0.0.1 and a free port, its root in a
//! temp dir, one per test process (tests that look at its folder start their own). Each test gets
//! a fresh bucket (a subfolder of the root). A watchdog stops it by PID when the test process ends.
//! A missing `s3s-fs` fails the test with the command that installs it: it is never skipped.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    sync::OnceLock,
    time::Duration,
};

use object_store::aws::AmazonS3Builder;
use watasu::lifecycle::ObjectFileStore;

use super::process::{clean_up_after_exit, free_local_addr, wait_until_listening};

const VERSION: &str = "s3s-fs 0.14.1";
const INSTALL: &str = "cargo install s3s-fs@0.14.1 --features binary --locked";
const ACCESS_KEY: &str = "watasu-test";
const SECRET_KEY: &str = "watasu-test-secret";

pub struct S3Server {
    pub root: PathBuf,
    pub addr: String,
}

static SHARED: OnceLock<S3Server> = OnceLock::new();

/// The server shared by every test of this process.
pub fn shared() -> &'static S3Server {
    SHARED.get_or_init(S3Server::start)
}

impl S3Server {
    /// Starts a new server and waits until it accepts connections.
    pub fn start() -> Self {
        check_installed();
        let root = tempfile::Builder::new().prefix("watasu-s3-").tempdir().expect("temp dir").keep();
        let addr = free_local_addr();
        let (host, port) = addr.split_once(':').unwrap();
        // Runs until the watchdog stops it after this process exits; nobody waits for it.
        #[allow(clippy::zombie_processes)]
        let child = Command::new("s3s-fs")
            .args(["--host", host, "--port", port, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(&root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting s3s-fs failed ({e}); install it: {INSTALL}"));
        let cleanup = format!("kill {} 2>/dev/null; rm -rf {}", child.id(), root.display());
        clean_up_after_exit(Command::new("sh"), &cleanup);
        wait_until_listening(&addr, Duration::from_secs(30), || "s3s-fs".to_owned());
        Self { root, addr }
    }

    /// A fresh, empty bucket.
    pub fn create_bucket(&self) -> String {
        let name = format!("t{}", &watasu::secret::random_token().expose()[..16].to_lowercase());
        std::fs::create_dir(self.root.join(&name)).expect("creating a bucket folder");
        name
    }

    pub fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.root.join(bucket)
    }

    /// Settings for this server, as `AWS_*` variables would give them.
    pub fn builder(&self) -> AmazonS3Builder {
        AmazonS3Builder::new()
            .with_endpoint(format!("http://{}", self.addr))
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_allow_http(true)
    }

    /// An object store on a fresh bucket, keys under a prefix.
    pub fn store(&self) -> (ObjectFileStore, String) {
        let bucket = self.create_bucket();
        let store = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), self.builder()).unwrap();
        (store, bucket)
    }

    /// Parts of multipart uploads not yet completed or aborted (s3s-fs keeps them in its root).
    pub fn pending_parts(&self) -> usize {
        std::fs::read_dir(&self.root)
            .unwrap()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(".upload_id-"))
            .count()
    }
}

fn check_installed() {
    let output = Command::new("s3s-fs").arg("--version").output();
    let version = output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
    assert!(version == VERSION, "s3s-fs 0.14.1 is needed (found {version:?}); install it: {INSTALL}");
}
