//! A tus PATCH into the object store, killed (SIGKILL of the real binary) while its piece streams:
//! a sealed upload keeps its PATCHes as pieces (joined and sealed at completion), and a piece over
//! one part is a multipart upload of its own, whose marker names the piece's path.
//! Started again, the server's leftover sweep aborts that upload once its marker is old enough,
//! and counts it once. s3s-fs does not answer ListMultipartUploads, so the test reads the
//! server's root, where each upload keeps its record and parts until it is completed or aborted.

use std::time::{Duration, SystemTime};

use tokio::io::AsyncWriteExt;
use watasu::{storage::object_store::PART_BYTES, uploads::CHECKPOINT_BYTES};

use super::names;
use crate::{
    both_backends,
    support::{
        Backend, Browser, count, eventually,
        installation::{Installation, kill_9},
        s3::S3Server,
    },
    uploads::Tus,
};

const SENDER: &str = "killed-piece@example.test";
const MIB: usize = 1 << 20;
/// Declared by the PATCH, so the killed server was still waiting for bytes.
const SIZE: usize = 40 * MIB;

/// The head of one PATCH declaring the whole file from offset 0.
fn patch_head(addr: &str, tus: &Tus, path: &str) -> String {
    format!(
        "PATCH {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: watasu_session={}\r\nTus-Resumable: 1.0.0\r\n\
         X-CSRF-Token: {}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/offset+octet-stream\r\n\
         Upload-Offset: 0\r\nContent-Length: {SIZE}\r\n\r\n",
        tus.browser.cookie("watasu_session").unwrap(),
        tus.csrf
    )
}

async fn a_piece_killed_mid_patch_is_aborted_by_the_leftover_sweep_and_counted_once(backend: Backend) {
    let inst = Installation::new(backend).await;
    let password = inst.add_sender(SENDER);
    let s3 = S3Server::start();
    let bucket = s3.create_bucket();
    let mut storage = s3.serve_args(&bucket);
    storage.push("--encrypt-files".to_owned());
    let storage: Vec<&str> = storage.iter().map(String::as_str).collect();
    let mut server = inst.start(&storage);
    let browser = Browser::new(&server.base());
    assert_eq!(browser.sign_in(SENDER, &password).await.status, 303);
    let tus = Tus { csrf: browser.get("/shares/new").await.csrf_token(), browser };
    let path = tus.create(SIZE as u64).await;

    // More than one part of the first piece (which ends at a checkpoint), and no more: the
    // piece is a multipart upload in progress when the server dies.
    let sent = PART_BYTES + 2 * MIB;
    assert!((sent as u64) < CHECKPOINT_BYTES);
    let mut stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    stream.write_all(patch_head(&server.addr, &tus, &path).as_bytes()).await.unwrap();
    stream.write_all(&vec![7u8; sent]).await.unwrap();
    let markers = s3.bucket_dir(&bucket).join("files/.multipart");
    eventually(Duration::from_secs(60), "the piece's first part reaching the store", async || {
        s3.pending_parts() > 0 && markers.exists() && names(&markers).len() == 1
    })
    .await;
    kill_9(&mut server);
    drop(stream);
    assert_eq!(s3.uploads_in_progress(), 1, "the killed piece's upload is not in the store");

    // Started again with its marker past the leftover age: a sweep at the maintenance
    // interval finds it.
    let marker = markers.join(names(&markers).into_iter().next().unwrap());
    let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
    std::fs::File::options().write(true).open(&marker).unwrap().set_modified(two_hours_ago).unwrap();
    let mut restarted = storage.clone();
    restarted.extend(["--maintenance-interval", "1s"]);
    let _server = inst.start(&restarted);
    let counted = async || {
        let sql = "SELECT CAST(COALESCE(SUM(deleted), 0) AS BIGINT) FROM maintenance_runs WHERE kind = 'leftovers' AND id > $1";
        count(&inst.db, sql, 0).await
    };
    eventually(Duration::from_secs(60), "a sweep that removed something", async || counted().await > 0).await;

    assert_eq!(s3.uploads_in_progress(), 0, "the killed piece's upload was never aborted");
    assert_eq!(s3.pending_parts(), 0, "its parts stay in the store");
    assert!(names(&markers).is_empty(), "its marker is left");
    assert_eq!(counted().await, 1, "one upload aborted, counted once");
    let sql =
        "SELECT CAST(COALESCE(SUM(failed), 0) AS BIGINT) FROM maintenance_runs WHERE kind = 'leftovers' AND id > $1";
    assert_eq!(count(&inst.db, sql, 0).await, 0, "a removal failed");
}

both_backends!(a_piece_killed_mid_patch_is_aborted_by_the_leftover_sweep_and_counted_once);
