//! The S3-compatible stores a report run starts on 127.0.0.1, each with one bucket, `bench`:
//! s3s-fs (a folder behind S3's API, itself slow) and Garage (the store small teams run; one node,
//! SQLite metadata). scripts/bench installs both. Each is stopped by its PID and its folder
//! removed when dropped.

use std::{
    fs::File,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use object_store::{ObjectStore, aws::AmazonS3Builder};

use super::procs::free_port;

/// The bucket every store of a run holds.
pub const BUCKET: &str = "bench";
const S3S_ACCESS_KEY: &str = "watasu-bench";
const S3S_SECRET: &str = "watasu-bench-secret";
/// Garage's cluster secret: the nodes' shared key (one node here), 32 bytes in hex.
const GARAGE_RPC_SECRET: &str = "62656e63682d6f6e6c792d7270632d7365637265742d6f662d7468652d72756e";
const GARAGE_REGION: &str = "garage";

/// A running store and how to reach its bucket.
pub struct S3Server {
    pub name: &'static str,
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    pub region: &'static str,
    pub access_key: String,
    pub secret: String,
    child: Child,
    root: PathBuf,
}

impl S3Server {
    /// s3s-fs serving `root` (its bucket a subfolder).
    pub fn s3s_fs(root: &Path) -> Self {
        std::fs::create_dir_all(root.join(BUCKET)).unwrap();
        let port = free_port();
        let child = Command::new("s3s-fs")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", S3S_ACCESS_KEY, "--secret-key", S3S_SECRET])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting s3s-fs (scripts/bench installs it)");
        wait_listening(port, "s3s-fs");
        Self {
            name: "s3s-fs",
            endpoint: format!("http://127.0.0.1:{port}"),
            region: "us-east-1",
            access_key: S3S_ACCESS_KEY.into(),
            secret: S3S_SECRET.into(),
            child,
            root: root.to_owned(),
        }
    }

    /// A one-node Garage cluster in `root`: started, given its layout, a bucket and a key allowed
    /// to read and write it (as its single-node guide does), its log in `log`.
    pub fn garage(root: &Path, log: &Path) -> Self {
        std::fs::create_dir_all(root).unwrap();
        let (rpc, api) = (free_port(), free_port());
        let config = root.join("garage.toml");
        let r = root.display();
        std::fs::write(
            &config,
            format!(
                "metadata_dir = \"{r}/meta\"\ndata_dir = \"{r}/data\"\ndb_engine = \"sqlite\"\n\
                 replication_factor = 1\nrpc_bind_addr = \"127.0.0.1:{rpc}\"\n\
                 rpc_public_addr = \"127.0.0.1:{rpc}\"\nrpc_secret = \"{GARAGE_RPC_SECRET}\"\n\n\
                 [s3_api]\ns3_region = \"{GARAGE_REGION}\"\napi_bind_addr = \"127.0.0.1:{api}\"\n"
            ),
        )
        .unwrap();
        let log = File::create(log).unwrap();
        let child = Command::new("garage")
            .arg("-c")
            .arg(&config)
            .arg("server")
            .env("RUST_LOG", "garage=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting garage (scripts/install-garage installs it)");
        let mut server = Self {
            name: "Garage",
            endpoint: format!("http://127.0.0.1:{api}"),
            region: GARAGE_REGION,
            access_key: String::new(),
            secret: String::new(),
            child,
            root: root.to_owned(),
        };
        wait_listening(rpc, "garage");
        let cli = |args: &[&str]| garage_cli(&config, args);
        let node = String::from_utf8(cli(&["node", "id", "-q"]).stdout).unwrap();
        let node = node.trim().split('@').next().unwrap().to_owned();
        cli(&["layout", "assign", "-z", "dc1", "-c", "1G", &node]);
        cli(&["layout", "apply", "--version", "1"]);
        cli(&["bucket", "create", BUCKET]);
        let key = String::from_utf8(cli(&["key", "create", "bench-key"]).stdout).unwrap();
        let field = |name: &str| {
            key.lines()
                .find_map(|line| line.split_once(':').filter(|(label, _)| label.trim() == name))
                .map(|(_, value)| value.trim().to_owned())
                .unwrap_or_else(|| panic!("garage key create shows no {name}: {key}"))
        };
        server.access_key = field("Key ID");
        server.secret = field("Secret key");
        cli(&["bucket", "allow", "--read", "--write", "--owner", BUCKET, "--key", "bench-key"]);
        wait_listening(api, "garage's S3 API");
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether `garage` runs here at all.
    pub fn garage_installed() -> bool {
        Command::new("garage").arg("--version").output().is_ok_and(|output| output.status.success())
    }

    /// The `AWS_*` variables that point watasu at this store.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", self.region.into()),
            ("AWS_ACCESS_KEY_ID", self.access_key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// A client of the bucket with object_store's defaults.
    pub fn client(&self) -> Arc<dyn ObjectStore> {
        let client = AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_region(self.region)
            .with_access_key_id(&self.access_key)
            .with_secret_access_key(&self.secret)
            .with_allow_http(true)
            // Signs its payloads as watasu does in the same run (`AWS_UNSIGNED_PAYLOAD`).
            .with_unsigned_payload(std::env::var("AWS_UNSIGNED_PAYLOAD").is_ok_and(|v| v == "true"))
            .with_bucket_name(BUCKET)
            .build()
            .unwrap();
        Arc::new(client)
    }

    /// The address of an object (path style).
    pub fn object_url(&self, path: &str) -> String {
        format!("{}/{BUCKET}/{path}", self.endpoint)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// One command of Garage's CLI against the node of `config`, retried for a few seconds: the node
/// answers its first commands only once it has started its RPC.
fn garage_cli(config: &Path, args: &[&str]) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let output = Command::new("garage").arg("-c").arg(config).args(args).output().expect("running garage");
        if output.status.success() {
            return output;
        }
        assert!(
            Instant::now() < deadline,
            "garage {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_listening(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}
