//! A webhook receiver that checks signatures with its own implementation of Standard Webhooks: a
//! small Python 3 standard-library server (hmac, hashlib, base64), not our signing code. It reads
//! the secrets to accept from a file at each request, answers 500 to the first `fail_first`
//! deliveries and 200 after, and records each request as one JSON line.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde_json::Value;

const SCRIPT: &str = r#"
import base64, hashlib, hmac, json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

folder, fail_first = sys.argv[1], int(sys.argv[2])
answered = 0

class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        global answered
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        message_id = self.headers.get("webhook-id", "")
        timestamp = self.headers.get("webhook-timestamp", "")
        signatures = self.headers.get("webhook-signature", "").split(" ")
        with open(os.path.join(folder, "secrets")) as f:
            secrets = [line.strip() for line in f if line.strip()]
        signed = message_id.encode() + b"." + timestamp.encode() + b"." + body
        verified = []
        for secret in secrets:
            key = base64.b64decode(secret[len("whsec_"):])
            expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            if any(s.startswith("v1,") and hmac.compare_digest(s[3:], expected) for s in signatures):
                verified.append(secret)
        answered += 1
        status = 500 if answered <= fail_first else 200
        record = {"id": message_id, "timestamp": timestamp, "signatures": len(signatures),
                  "verified": verified, "fresh": abs(time.time() - int(timestamp or "0")) < 300,
                  "status": status, "body": body.decode()}
        with open(os.path.join(folder, "log"), "a") as f:
            f.write(json.dumps(record) + "\n")
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Receiver)
with open(os.path.join(folder, "port.tmp"), "w") as f:
    f.write(str(server.server_port))
os.rename(os.path.join(folder, "port.tmp"), os.path.join(folder, "port"))
server.serve_forever()
"#;

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub id: String,
    /// How many signatures the header carried.
    pub signatures: u64,
    /// The secrets (of those it was given) that a signature verified with.
    pub verified: Vec<String>,
    /// The timestamp was within five minutes of the receiver's clock.
    pub fresh: bool,
    /// What the receiver answered.
    pub status: u64,
    pub body: Value,
}

pub struct Receiver {
    folder: tempfile::TempDir,
    pub port: u16,
    _child: tokio::process::Child,
}

impl Receiver {
    /// Starts the receiver on 127.0.0.1; it answers 500 to the first `fail_first` requests.
    pub async fn start(fail_first: u32) -> Self {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("receiver.py"), SCRIPT).unwrap();
        std::fs::write(folder.path().join("secrets"), "").unwrap();
        let child = tokio::process::Command::new("python3")
            .arg(folder.path().join("receiver.py"))
            .arg(folder.path())
            .arg(fail_first.to_string())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs the receiver");
        let port_file = folder.path().join("port");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !port_file.exists() {
            assert!(Instant::now() < deadline, "the receiver never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let port = std::fs::read_to_string(&port_file).unwrap().trim().parse().unwrap();
        Self { folder, port, _child: child }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// The secrets it accepts from now on.
    pub fn accept(&self, secrets: &[&str]) {
        std::fs::write(self.path("secrets"), secrets.join("\n")).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.folder.path().join(name)
    }

    /// Every request so far, in order.
    pub fn received(&self) -> Vec<Received> {
        read_log(&self.path("log"))
    }
}

fn read_log(path: &Path) -> Vec<Received> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            Received {
                id: record["id"].as_str().unwrap().to_owned(),
                signatures: record["signatures"].as_u64().unwrap(),
                verified: record["verified"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect(),
                fresh: record["fresh"].as_bool().unwrap(),
                status: record["status"].as_u64().unwrap(),
                body: serde_json::from_str(record["body"].as_str().unwrap()).unwrap(),
            }
        })
        .collect()
}
