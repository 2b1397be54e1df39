//! The whole handover in a real Chromium: the sender sends three files (one with a Japanese name,
//! one larger than the page's upload chunk, so the resumable upload sends it in two pieces) to two
//! people; the first recipient downloads the ZIP, which a proxy cuts and Chromium resumes; the
//! second, without JavaScript, downloads each file with its own button; a third browser holding
//! the first one's forwarded link is refused; the stored bytes go only once both are done.

use std::{collections::BTreeMap, path::Path, process::Command, time::Duration};

use sha2::{Digest, Sha256};

use crate::support::{
    Backend, PASSWORD, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT, saved_file},
    cut_proxy::CutProxy,
    texts,
};

/// Over the page's 50 MiB upload chunk (`CHUNK_BYTES` in static/upload.js).
const BIG: usize = (50 << 20) + 4096;
const RECIPIENTS: [&str; 2] = ["ichiro@example.test", "jiro@example.test"];

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Each entry of the ZIP at `path` by name, with its content's SHA-256, as Python's zipfile reads it
/// (its CRC check included).
fn zip_entries(path: &Path) -> BTreeMap<String, String> {
    let script = "import hashlib, json, sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None\n\
                  print(json.dumps({i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}))";
    let out = Command::new("python3").args(["-c", script]).arg(path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_files_reach_two_people_whole_and_leave_the_server_after_both() {
    let _turn = crate::support::bulk_transfer_turn().await;
    let mut proxy = CutProxy::bind().await;
    let public = format!("http://{}", proxy.addr);
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.base_url = Some(public.parse().unwrap());
        s.access_time_gc = false;
    })
    .await;
    proxy.forward_to(app.addr, BIG / 3);
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    let files: [(&str, &[u8]); 3] =
        [("見積書（最終版）.pdf", b"%PDF-1.4 quote\n"), ("notes.txt", b"some notes\n"), ("drawing.bin", &big)];
    for (name, content) in &files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let expected: BTreeMap<String, String> = files.iter().map(|(n, c)| ((*n).to_owned(), sha256(c))).collect();

    // The sender, with JavaScript: every file through the resumable upload.
    let sender = app.create_sender_with_password("sender@example.test", "佐藤 花子", PASSWORD).await;
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;
    browser.sign_in(&public, "sender@example.test").await;
    browser.goto(&format!("{public}/shares/new")).await;
    browser.fill("#recipient", &RECIPIENTS.join(", ")).await;
    let paths: Vec<String> = files.iter().map(|(n, _)| dir.path().join(n).to_str().unwrap().to_owned()).collect();
    browser.find("input[type=file]").await.send_keys(&paths.join("\n")).await.expect("choosing the files");
    browser.wait_for("#chosen-files [data-chosen-file]", DEFAULT_WAIT).await;
    browser.click("main form[data-upload] > button[type=submit]").await;
    let created = async |b: &BrowserSession| b.current_path().await.ends_with("/created");
    browser.wait_until("the created page", Duration::from_secs(120), created).await;
    let mut links = Vec::new();
    for link in browser.find_all("[data-created-link] input").await {
        links.push(link.prop("value").await.unwrap().unwrap_or_default());
    }
    assert_eq!(links.len(), 2, "{links:?}");
    browser.close().await;
    let handover = crate::support::count(app.db(), "SELECT max(id) FROM handovers WHERE sender_id = $1", sender).await;
    let keys =
        texts(app.db(), "SELECT storage_key FROM files WHERE handover_id = $1 ORDER BY position", handover).await;
    assert_eq!(keys.len(), 3);
    let stored = |key: &String| app.data_dir.path().join("files").join(key).is_file();
    assert!(keys.iter().all(stored));
    assert!(proxy.requests_with("PATCH") >= 4, "the large file did not go in two pieces");

    // The first recipient: the ZIP, cut by the proxy and resumed by Chromium.
    let first_dir = tempfile::tempdir().unwrap();
    let first = BrowserSession::start(BrowserOptions::desktop().downloads_to(first_dir.path())).await;
    app.walk_to_download_step(&first, &links[0], RECIPIENTS[0]).await;
    first.click("#step .download-all").await;
    let zip = saved_file(first_dir.path(), |name| name.ends_with(".zip")).await;
    assert!(proxy.cut_made(), "the proxy never cut the archive");
    assert_eq!(zip_entries(&zip), expected);
    first.close().await;

    // The second, without JavaScript: each file with its own button.
    let second_dir = tempfile::tempdir().unwrap();
    let options = BrowserOptions::desktop().without_javascript().language("en").downloads_to(second_dir.path());
    let second = BrowserSession::start(options).await;
    app.walk_to_download_step(&second, &links[1], RECIPIENTS[1]).await;
    for (position, (name, content)) in files.iter().enumerate() {
        second.click(&format!(".file-item[data-position='{position}'] .download-one")).await;
        let saved = saved_file(second_dir.path(), |found| found == *name).await;
        assert_eq!(sha256(&std::fs::read(saved).unwrap()), sha256(content), "{name}");
    }
    second.close().await;

    // Someone the first recipient forwarded the link to.
    let stranger = BrowserSession::start(BrowserOptions::phone()).await;
    stranger.goto(&links[0]).await;
    stranger.wait_for("section.card[data-status='410']", DEFAULT_WAIT).await;
    assert_eq!(stranger.find_all("#step, .file-item").await.len(), 0, "the stranger is offered something");
    stranger.close().await;

    // The bytes stay while either recipient's delivery grace runs, and go after both.
    let shares =
        texts(app.db(), "SELECT CAST(id AS TEXT) FROM shares WHERE handover_id = $1 ORDER BY id", handover).await;
    let gc = app.state.services.gc.gc();
    app.consumed_ago(shares[0].parse().unwrap(), 16 * 60).await;
    gc.collect(10, watasu::maintenance::Trigger::Cli).await.unwrap();
    assert!(keys.iter().all(stored), "a file went while the second recipient's grace ran");
    app.consumed_ago(shares[1].parse().unwrap(), 16 * 60).await;
    gc.collect(10, watasu::maintenance::Trigger::Cli).await.unwrap();
    assert!(!keys.iter().any(stored), "a file outlived both shares");
    app.stop().await;
}
