//! Resumable uploads as they meet a real deployment: a real Chromium runs the new-share page's
//! tus-js-client through a real nginx that refuses request bodies over 100 MB (as Cloudflare
//! does), in front of the real binary. A 300 MB file crosses in 50 MiB chunks and becomes a share
//! whose stored SHA-256 is the source's; with the server killed (-9) halfway and started again,
//! the same upload resumes, and nothing partial is shared meanwhile.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};

use crate::{
    both_backends,
    fault_drills::lines,
    support::{
        Backend,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        installation::{Installation, kill_9},
        nginx::Nginx,
        process::{Server, free_local_addr},
    },
};

pub(crate) const SENDER: &str = "tus-sender@example.test";
const RECIPIENT: &str = "tus-recipient@example.test";
pub(crate) const MB: u64 = 1_000_000;
const FILE_SIZE: u64 = 300 * MB;
/// The proxy's cap: Cloudflare's on its free and pro plans.
const PROXY_CAP: &str = "100m";
/// The page's chunk size (static/upload.js).
pub(crate) const CHUNK: u64 = 50 * 1024 * 1024;
/// Long enough for 300 MB through a debug build and a restart.
pub(crate) const UPLOAD_WAIT: Duration = Duration::from_secs(300);

/// A file of FILE_SIZE bytes whose every byte depends on its offset; returns its digest.
fn write_source(dir: &Path) -> (PathBuf, String) {
    write_source_of(dir, FILE_SIZE)
}

/// A file of `size` bytes whose every byte depends on its offset, written in 1 MiB steps.
pub(crate) fn write_source_of(dir: &Path, size: u64) -> (PathBuf, String) {
    let path = dir.join("大きな資料.bin");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut written = 0u64;
    while written < size {
        let len = (size - written).min(chunk.len() as u64) as usize;
        for (i, byte) in chunk[..len].iter_mut().enumerate() {
            *byte = ((written + i as u64) % 251) as u8;
        }
        file.write_all(&chunk[..len]).unwrap();
        hasher.update(&chunk[..len]);
        written += len as u64;
    }
    file.flush().unwrap();
    (path, hex::encode(hasher.finalize()))
}

/// The installation, its server on a fixed address and nginx in front with the cap.
pub(crate) struct Deployment {
    _turn: tokio::sync::RwLockReadGuard<'static, ()>,
    pub(crate) inst: Installation,
    pub(crate) addr: String,
    pub(crate) server: Server,
    pub(crate) nginx: Nginx,
    pub(crate) password: String,
}

pub(crate) const SERVE_ARGS: [&str; 2] = ["--max-upload-bytes", "1G"];

impl Deployment {
    pub(crate) async fn new(backend: crate::support::Backend) -> Self {
        let _turn = crate::support::bulk_transfer_turn().await;
        let inst = Installation::new(backend).await;
        let password = inst.add_sender(SENDER);
        let addr = free_local_addr();
        let server = inst.start_on(&addr, &SERVE_ARGS);
        let nginx = Nginx::start(&addr, PROXY_CAP);
        Self { _turn, inst, addr, server, nginx, password }
    }

    /// The stored files (name, digest, size) of every share.
    async fn shared_files(&self) -> Vec<String> {
        lines(
            &self.inst.db,
            "SELECT f.sha256 || ' ' || CAST(f.size_bytes AS TEXT) FROM shares s JOIN files f ON f.handover_id = s.handover_id",
        )
        .await
    }

    /// The durable offset of the one upload in progress, if there is one.
    pub(crate) async fn upload_offset(&self) -> Option<u64> {
        let offsets = lines(&self.inst.db, "SELECT CAST(upload_offset AS TEXT) FROM uploads").await;
        offsets.first().map(|o| o.parse().unwrap())
    }

    /// The requests nginx passed to the app: (method, path, status, request bytes).
    pub(crate) fn proxied(&self) -> Vec<(String, String, u16, u64)> {
        self.nginx
            .access_log()
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields[0].to_owned(), fields[1].to_owned(), fields[2].parse().unwrap(), fields[3].parse().unwrap())
            })
            .collect()
    }
}

/// A browser signed in through the proxy, on the new-share form with the recipient and the file
/// filled in, not yet sent.
async fn filled_form(deployment: &Deployment, file: &Path) -> BrowserSession {
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;
    sign_in_through(deployment, &browser).await;
    browser.goto(&format!("{}/shares/new", deployment.nginx.base())).await;
    browser.fill("#recipient", RECIPIENT).await;
    let input = browser.find("input[type=file]").await;
    input.send_keys(file.to_str().unwrap()).await.expect("choosing the file");
    browser
}

/// Signs `browser` in as the sender, through the proxy.
pub(crate) async fn sign_in_through(deployment: &Deployment, browser: &BrowserSession) {
    browser.goto(&format!("{}/login", deployment.nginx.base())).await;
    browser.fill("#email", SENDER).await;
    browser.fill("#password", &deployment.password).await;
    browser.click("main form button[type=submit]").await;
    browser.wait_until("the signed-in list", DEFAULT_WAIT, async |b| b.current_path().await == "/shares").await;
}

/// Slows the browser's uploads to `bytes_per_second`, so that a step can land mid-upload.
pub(crate) async fn throttle(browser: &BrowserSession, bytes_per_second: u64) {
    browser.cdp("Network.enable", serde_json::json!({})).await;
    let conditions = serde_json::json!({ "offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": bytes_per_second });
    browser.cdp("Network.emulateNetworkConditions", conditions).await;
}

/// Waits until the server holds at least `bytes` of the upload in progress.
pub(crate) async fn wait_for_offset(deployment: &Deployment, bytes: u64) -> u64 {
    let started = Instant::now();
    loop {
        if let Some(offset) = deployment.upload_offset().await.filter(|o| *o >= bytes) {
            return offset;
        }
        assert!(started.elapsed() < UPLOAD_WAIT, "the upload never reached {bytes} bytes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The uploader's status line shows `text`.
async fn wait_for_status(browser: &BrowserSession, text: &str) {
    let what = format!("the status {text:?}");
    browser.wait_until(&what, DEFAULT_WAIT, async |b| b.text("#upload-status").await == text).await;
}

/// Sends the form and waits for the created page, which the form post shows after the upload.
async fn wait_for_the_link(browser: &BrowserSession) -> Duration {
    let started = Instant::now();
    browser.wait_for("#share-link", UPLOAD_WAIT).await;
    started.elapsed()
}

/// The chunks went through the proxy under its cap, and one upload was made for the file.
fn assert_chunked_under_the_cap(deployment: &Deployment) -> u64 {
    let proxied = deployment.proxied();
    let creations = proxied.iter().filter(|(m, p, _, _)| m == "POST" && p == "/uploads").count();
    assert_eq!(creations, 1, "the file was uploaded as {creations} uploads: {proxied:?}");
    let patches: Vec<_> = proxied.iter().filter(|(m, p, _, _)| m == "PATCH" && p.starts_with("/uploads/")).collect();
    assert!(patches.len() as u64 >= FILE_SIZE.div_ceil(CHUNK), "{patches:?}");
    let largest = patches.iter().map(|(_, _, _, bytes)| *bytes).max().unwrap();
    assert!(largest < 100 * MB, "a PATCH of {largest} bytes went past a 100 MB cap");
    patches.iter().map(|(_, _, _, bytes)| *bytes).sum()
}

async fn a_300_mb_file_crosses_a_100_mb_proxy_cap_in_resumable_chunks(backend: Backend) {
    let deployment = Deployment::new(backend).await;
    // The cap is real: one request with the whole file is refused by nginx itself.
    let whole = reqwest::Client::new()
        .post(format!("{}/shares/new", deployment.nginx.base()))
        .header("Content-Length", FILE_SIZE.to_string())
        .body(vec![0u8; 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status(), 413, "nginx let a 300 MB body through");

    let files = tempfile::tempdir().unwrap();
    let (source, digest) = write_source(files.path());
    let browser = filled_form(&deployment, &source).await;
    browser.click("main form[data-upload] button[type=submit]").await;
    let took = wait_for_the_link(&browser).await;

    assert_eq!(deployment.shared_files().await, [format!("{digest} {FILE_SIZE}")]);
    assert_eq!(deployment.upload_offset().await, None, "the finished upload became the share's file");
    let sent = assert_chunked_under_the_cap(&deployment);
    assert_eq!(sent / MB, FILE_SIZE / MB, "bytes sent in PATCH requests, headers included");
    eprintln!("300 MB through nginx (cap {PROXY_CAP}) in {took:?}");
    browser.close().await;
}

async fn an_upload_resumes_after_the_server_is_killed_halfway(backend: Backend) {
    let mut deployment = Deployment::new(backend).await;
    let files = tempfile::tempdir().unwrap();
    let (source, digest) = write_source(files.path());
    let browser = filled_form(&deployment, &source).await;
    // Slowed down, so that the kill lands in the middle of a chunk.
    throttle(&browser, 40 * MB).await;
    browser.click("main form[data-upload] button[type=submit]").await;
    let halfway = wait_for_offset(&deployment, FILE_SIZE / 2).await;
    kill_9(&mut deployment.server);
    // Nothing partial is shared: no share, no file row, and the upload has no digest.
    assert!(deployment.shared_files().await.is_empty());
    let digests = lines(&deployment.inst.db, "SELECT COALESCE(sha256, 'none') FROM uploads").await;
    assert_eq!(digests, ["none"]);

    deployment.server = deployment.inst.start_on(&deployment.addr, &SERVE_ARGS);
    wait_for_the_link(&browser).await;
    assert_eq!(deployment.shared_files().await, [format!("{digest} {FILE_SIZE}")]);
    let sent = assert_chunked_under_the_cap(&deployment);
    // Resumed, not started again: at most the chunk in flight at the kill was sent twice.
    assert!(sent < FILE_SIZE + 2 * CHUNK, "{sent} bytes sent for a {FILE_SIZE}-byte file (killed at {halfway})");
    browser.close().await;
}

async fn the_uploader_pauses_resumes_cancels_and_picks_up_after_a_reload(backend: Backend) {
    let deployment = Deployment::new(backend).await;
    let words = &watasu::i18n::Lang::Ja.text().dashboard.uploader;
    let files = tempfile::tempdir().unwrap();
    let size = 30 * MB;
    let (source, digest) = write_source_of(files.path(), size);

    // Cancel, with a small file already sent and the large one going: both uploads are
    // terminated on the server (none keeps holding the reservation) and the form is ready again.
    let small = files.path().join("first.txt");
    std::fs::write(&small, b"sent before the cancel").unwrap();
    // Large enough (two minutes at the throttled rate) that the cancel lands while it is going,
    // however slowly a busy machine reaches the click; sparse, so it costs no disk.
    let large = files.path().join("large.bin");
    std::fs::File::create(&large).unwrap().set_len(600 * MB).unwrap();
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;
    sign_in_through(&deployment, &browser).await;
    browser.goto(&format!("{}/shares/new", deployment.nginx.base())).await;
    browser.fill("#recipient", RECIPIENT).await;
    let both = format!("{}\n{}", small.to_str().unwrap(), large.to_str().unwrap());
    browser.find("input[type=file]").await.send_keys(&both).await.expect("choosing two files");
    throttle(&browser, 5 * MB).await;
    browser.click("main form[data-upload] button[type=submit]").await;
    let second_going = "(function () { var bars = document.querySelectorAll('#chosen-files progress'); \
                        return bars.length === 2 && bars[0].value === 100 && bars[1].value > 0; })()";
    browser.wait_for_js(second_going, UPLOAD_WAIT).await;
    assert_eq!(
        lines(&deployment.inst.db, "SELECT CAST(upload_length AS TEXT) FROM uploads WHERE sha256 IS NOT NULL").await,
        ["22"]
    );
    browser.click("#uploader [data-upload-cancel]").await;
    wait_for_status(&browser, words.cancelled).await;
    let left = async || lines(&deployment.inst.db, "SELECT public_id FROM uploads").await;
    crate::support::eventually(DEFAULT_WAIT, "the cancelled batch's uploads to be ended", async || {
        left().await.is_empty()
    })
    .await;
    assert_eq!(browser.attr("#uploader", "hidden").await.as_deref(), Some("true"));
    assert_eq!(browser.attr("main form[data-upload] button[type=submit]", "disabled").await, None);
    browser.close().await;

    // Pause and resume, then a reload in the middle: choosing the same file again goes on
    // with the same upload, and the share gets the whole file.
    let browser = filled_form(&deployment, &source).await;
    // Slow enough that the reload lands before the last two thirds are in (ten seconds), however
    // slowly a busy machine gets from seeing the offset to reloading.
    throttle(&browser, 2 * MB).await;
    browser.click("main form[data-upload] button[type=submit]").await;
    wait_for_offset(&deployment, 1).await;
    browser.click("#uploader [data-upload-pause]").await;
    wait_for_status(&browser, words.paused).await;
    assert_eq!(browser.text("#uploader [data-upload-pause]").await, words.resume);
    browser.click("#uploader [data-upload-pause]").await;
    let before_reload = wait_for_offset(&deployment, size / 3).await;
    browser.reload().await;
    browser.fill("#recipient", RECIPIENT).await;
    let input = browser.find("input[type=file]").await;
    input.send_keys(source.to_str().unwrap()).await.expect("choosing the file again");
    browser.click("main form[data-upload] button[type=submit]").await;
    wait_for_the_link(&browser).await;
    assert_eq!(deployment.shared_files().await, [format!("{digest} {size}")]);
    let proxied = deployment.proxied();
    let creations = proxied.iter().filter(|(m, p, status, _)| m == "POST" && p == "/uploads" && *status == 201).count();
    assert_eq!(creations, 3, "two uploads cancelled, one resumed across pause and reload: {proxied:?}");
    let sent: u64 = proxied.iter().filter(|(m, _, _, _)| m == "PATCH").map(|(_, _, _, bytes)| *bytes).sum();
    assert!(sent < 2 * size, "{sent} bytes sent for a {size}-byte file: the reload (at {before_reload}) started over");
    browser.close().await;
}

both_backends!(
    a_300_mb_file_crosses_a_100_mb_proxy_cap_in_resumable_chunks,
    an_upload_resumes_after_the_server_is_killed_halfway,
    the_uploader_pauses_resumes_cancels_and_picks_up_after_a_reload
);
