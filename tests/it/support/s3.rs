//! A real S3-compatible server for the tests: `s3s-fs` on 127.0.0.1 and a free port, its root in a
//! temp dir, one per test process (tests that look at its folder start their own). Each test gets
//! a fresh bucket (a subfolder of the root). A watchdog stops it by PID when the test process ends.
//! A missing `s3s-fs` fails the test with the command that installs it: it is never skipped.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::Duration,
};

use object_store::aws::AmazonS3Builder;
use watasu::{config::StorageSettings, secret::SecretString, storage::ObjectFileStore};

use super::process::{clean_up_after_exit, free_local_addr, wait_until_listening};

const VERSION: &str = "s3s-fs 0.14.1";
const INSTALL: &str = "cargo install s3s-fs@0.14.1 --features binary --locked";
const ACCESS_KEY: &str = "watasu-test";
const SECRET_KEY: &str = "watasu-test-secret";

pub struct S3Server {
    pub root: PathBuf,
    pub addr: String,
    child: Mutex<Child>,
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
        clean_up_after_exit(Command::new("sh"), &format!("rm -rf {}", root.display()));
        let child = spawn(&root, &addr);
        Self { root, addr, child: Mutex::new(child) }
    }

    /// Stops the server (by its PID) and waits until it is gone: the store is down.
    pub fn stop(&self) {
        let mut child = self.child.lock().unwrap();
        child.kill().expect("stopping s3s-fs");
        child.wait().expect("waiting for s3s-fs to stop");
    }

    /// Starts it again on the same address and root, with everything it stored.
    pub fn restart(&self) {
        *self.child.lock().unwrap() = spawn(&self.root, &self.addr);
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

    /// The `watasu serve` flags that put stored files under `s3://BUCKET/files` on this server
    /// (the flags of the standard `AWS_*` variables).
    pub fn serve_args(&self, bucket: &str) -> Vec<String> {
        let endpoint = format!("http://{}", self.addr);
        let location = format!("s3://{bucket}/files");
        [
            "--storage",
            &location,
            "--aws-endpoint-url",
            &endpoint,
            "--aws-region",
            "us-east-1",
            "--aws-access-key-id",
            ACCESS_KEY,
            "--aws-secret-access-key",
            SECRET_KEY,
            "--aws-allow-http",
            "true",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// The same settings for an app started in this process.
    pub fn storage_settings(&self, bucket: &str) -> StorageSettings {
        StorageSettings {
            location: Some(format!("s3://{bucket}/files")),
            endpoint_url: Some(format!("http://{}", self.addr)),
            region: Some("us-east-1".to_owned()),
            access_key_id: Some(ACCESS_KEY.to_owned()),
            secret_access_key: Some(SecretString::new(SECRET_KEY)),
            allow_http: Some("true".to_owned()),
            unsigned_payload: None,
        }
    }

    /// An object store on a fresh bucket, keys under a prefix.
    pub fn store(&self) -> (ObjectFileStore, String) {
        let bucket = self.create_bucket();
        let store = ObjectFileStore::from_url_with(&format!("s3://{bucket}/files"), self.builder()).unwrap();
        (store, bucket)
    }

    /// Parts of multipart uploads not yet completed or aborted (s3s-fs keeps them in its root).
    pub fn pending_parts(&self) -> usize {
        self.root_names(|name| name.starts_with(".upload_id-"))
    }

    /// Multipart uploads not yet completed or aborted, with or without parts: what S3's
    /// ListMultipartUploads would list. s3s-fs does not answer that call; it keeps each upload's
    /// record (`.upload-<id>.json`) in its root until the upload is completed or aborted.
    pub fn uploads_in_progress(&self) -> usize {
        self.root_names(|name| name.starts_with(".upload-") && name.ends_with(".json"))
    }

    fn root_names(&self, wanted: impl Fn(&str) -> bool) -> usize {
        let names = std::fs::read_dir(&self.root).unwrap().flatten();
        names.filter(|entry| wanted(&entry.file_name().to_string_lossy())).count()
    }
}

/// `s3s-fs` serving `root` on `addr`, once it accepts connections; a watchdog stops it by PID
/// when the test process ends.
fn spawn(root: &std::path::Path, addr: &str) -> Child {
    let (host, port) = addr.split_once(':').unwrap();
    let child = Command::new("s3s-fs")
        .args(["--host", host, "--port", port, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting s3s-fs failed ({e}); install it: {INSTALL}"));
    clean_up_after_exit(Command::new("sh"), &format!("kill {} 2>/dev/null", child.id()));
    wait_until_listening(addr, Duration::from_secs(30), || "s3s-fs".to_owned());
    child
}

fn check_installed() {
    let output = Command::new("s3s-fs").arg("--version").output();
    let version = output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
    assert!(version == VERSION, "s3s-fs 0.14.1 is needed (found {version:?}); install it: {INSTALL}");
}
