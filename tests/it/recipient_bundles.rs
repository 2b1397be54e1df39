//! The recipient's side of a handover of several files: the page before the code says how many
//! and from whom (no names), the download step lists each file with its size and SHA-256; the
//! first button claims the one download for the browser that pressed it, which then fetches the
//! ZIP archive of them all or each file (resumable, in ranges); "download completed" comes only
//! once every file went out whole; the other recipient's share is their own; and the files go
//! only when both shares are done, also from the object store.

use std::{process::Command, time::Duration};

use sha2::{Digest, Sha256};
use watasu::maintenance::Trigger;

use crate::{
    both_backends,
    file_stores::count_files,
    support::{Backend, RECIPIENT, TestApp, TestShare, count, event_kinds, eventually, s3, smtp::ReceivedMail},
};

const SENDER: &str = "sender@example.test";
const OTHER: &str = "two@example.test";
const NOTES: &[u8] = b"first file\n";
const REPORT: &[u8] = "二番目のファイル：報告書\n".as_bytes();

/// 24 MiB that differ byte to byte, so a misplaced range shows in the digest.
fn big_content() -> &'static [u8] {
    Box::leak((0..24usize << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into_boxed_slice())
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

/// Three files, one with a Japanese name, for [`RECIPIENT`] and [`OTHER`]; the files in order.
async fn bundle(app: &TestApp) -> ([TestShare; 2], [(&'static str, &'static [u8]); 3]) {
    let files = [("notes.txt", NOTES), ("big.bin", big_content()), ("報告書.txt", REPORT)];
    let sender = app.create_sender(SENDER, "Sender Sato").await;
    let shares = files
        .iter()
        .fold(app.fake_share().sender(sender), |share, (name, content)| share.file(name, content))
        .recipient(RECIPIENT)
        .recipient(OTHER)
        .create_all()
        .await;
    ([shares[0].clone(), shares[1].clone()], files)
}

async fn completed(app: &TestApp, share_id: i64) -> bool {
    count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND delivered_at IS NOT NULL", share_id).await == 1
}

async fn delivered_bytes(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT delivered_bytes FROM shares WHERE id = $1", share_id).await
}

async fn completions(app: &TestApp, share_id: i64) -> usize {
    event_kinds(app, share_id).await.iter().filter(|kind| *kind == "download_completed").count()
}

fn files_in_store(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.path().join("files")).map_or(0, |dir| dir.count())
}

/// Every name in the archive with its content's SHA-256, as Python's `zipfile` reads them (after
/// checking every CRC).
/// The first `at_least` bytes (or a few more) of a response, which is then dropped: a cut download.
async fn cut_after(mut response: reqwest::Response, at_least: usize) -> Vec<u8> {
    let mut received = Vec::new();
    while received.len() < at_least {
        received.extend_from_slice(&response.chunk().await.unwrap().expect("more bytes"));
    }
    received
}

/// What `opened_with_python` finds in the archive of `files`: each name with its content's SHA-256.
pub(crate) fn entries_of(files: &[(&str, &[u8])]) -> Vec<(String, String)> {
    files.iter().map(|(name, content)| ((*name).to_owned(), sha256(content))).collect()
}

pub(crate) fn opened_with_python(archive: &[u8]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.zip");
    std::fs::write(&path, archive).unwrap();
    let script = "import sys, zipfile, hashlib\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  assert z.testzip() is None\n\
                  for i in z.infolist(): print(i.filename + '\\t' + hashlib.sha256(z.read(i)).hexdigest())";
    let output = Command::new("python3")
        .args(["-c", script, path.to_str().unwrap()])
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("python3 must be installed");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (name, digest) = line.split_once('\t').unwrap();
            (name.to_owned(), digest.to_owned())
        })
        .collect()
}

async fn the_pages_count_the_files_before_the_code_and_list_them_after_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ([share, _], files) = bundle(&app).await;

    let before = app.browser().open_link(&share.token).await;
    assert_eq!(before.status, 200);
    let lead = before.texts("#step .lead").join(" ");
    assert!(lead.contains("Sender Sato") && lead.contains('3'), "{lead}");
    for (name, _) in files {
        assert!(!before.body.contains(name), "the page before the code names {name}");
    }

    let browser = app.browser();
    let page = app.verify(&browser, &share).await;
    let names: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
    assert_eq!(page.texts(".file-list .file-name"), names);
    let digests: Vec<String> = files.iter().map(|(_, content)| sha256(content)).collect();
    assert_eq!(page.texts(".file-list .file-sha256"), digests);
    assert_eq!(page.texts(".file-list .file-size").len(), 3);
    assert!(page.texts(".file-list .file-size")[1].contains("MB"), "{:?}", page.texts(".file-size"));
    let base = format!("/s/{}", share.token);
    let actions = page.html().select(&scraper::Selector::parse("#step form").unwrap()).count();
    assert_eq!(actions, 4, "one button for all and one per file");
    assert_eq!(page.attr("#step form", "action"), Some(format!("{base}/download")), "the first button is for all");
    assert_eq!(page.attr(".file-item[data-position='2'] form", "action"), Some(format!("{base}/files/2")));
}

async fn a_zip_cut_mid_way_and_resumed_opens_whole_and_completes_the_download_only_at_its_end(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ([share, other_share], files) = bundle(&app).await;
    let (browser, csrf) = app.granted_browser(&share).await;

    let claim = browser.claim(&share.token, &csrf).await;
    assert_eq!((claim.status().as_u16(), header(&claim, "location")), (303, format!("/s/{}/file", share.token)));
    let head = browser.client.head(browser.url(&format!("/s/{}/file", share.token))).send().await.unwrap();
    assert_eq!((head.status().as_u16(), header(&head, "accept-ranges")), (200, "bytes".to_owned()));
    let head_length = header(&head, "content-length");
    assert!(head.bytes().await.unwrap().is_empty());
    let first = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(first.status(), 200);
    assert_eq!(header(&first, "content-type"), "application/zip");
    let disposition = header(&first, "content-disposition");
    assert!(disposition.starts_with("attachment; filename=\"watasu-") && disposition.contains(".zip"), "{disposition}");
    let (etag, size) = (header(&first, "etag"), header(&first, "content-length").parse::<usize>().unwrap());
    assert!(etag.starts_with("\"zip-"), "{etag}");
    assert_eq!(head_length, size.to_string(), "HEAD says the same length");
    let mut received = cut_after(first, size * 3 / 10).await;
    eventually(Duration::from_secs(10), "the cut response's progress", async || {
        delivered_bytes(&app, share.id).await > 0
    })
    .await;
    // `delivered_bytes` is written only when a response is over, so the cut one has recorded its end.
    assert!(!completed(&app, share.id).await, "a cut archive completed the download");
    assert_eq!(completions(&app, share.id).await, 0);

    // A second browser with a grant of its own gets nothing.
    let (second, second_csrf) = app.granted_browser(&share).await;
    assert_eq!(second.claim(&share.token, &second_csrf).await.status(), 410);
    assert_eq!(second.fetch_file(&share.token, &[]).await.status(), 410);
    assert_eq!(second.fetch_one(&share.token, 0, &[]).await.status(), 410);

    let range = format!("bytes={}-", received.len());
    let rest = browser.fetch_file(&share.token, &[("Range", &range), ("If-Range", &etag)]).await;
    assert_eq!(rest.status(), 206);
    assert_eq!(header(&rest, "content-range"), format!("bytes {}-{}/{size}", received.len(), size - 1));
    assert_eq!(header(&rest, "etag"), etag);
    received.extend_from_slice(&rest.bytes().await.unwrap());
    assert_eq!(opened_with_python(&received), entries_of(&files));

    eventually(Duration::from_secs(10), "the completed download", async || completions(&app, share.id).await == 1)
        .await;
    assert!(completed(&app, share.id).await);
    let receipt = eventually_mail_to(&app, SENDER).await;
    assert!(receipt.subject().contains('3'), "the subject counts the files: {}", receipt.subject());
    let text = receipt.text();
    for (name, _) in files {
        assert!(text.contains(name), "the receipt names {name}: {text}");
    }

    // The other recipient's share is theirs: still active, and their own claim works.
    assert_eq!(event_kinds(&app, other_share.id).await, Vec::<String>::new());
    let (theirs, their_csrf) = app.granted_browser(&other_share).await;
    assert_eq!(theirs.claim_one(&other_share.token, &their_csrf, 2).await.status(), 303);
    let one = theirs.fetch_one(&other_share.token, 2, &[]).await;
    assert_eq!(one.status(), 200);
    assert_eq!(one.bytes().await.unwrap().as_ref(), REPORT);
}

async fn files_fetched_one_by_one_complete_the_download_with_the_last_and_go_when_both_shares_are_done(
    backend: Backend,
) {
    let app = TestApp::spawn(backend).await;
    let ([share, other_share], files) = bundle(&app).await;
    let (browser, csrf) = app.granted_browser(&share).await;

    // A position the handover does not have claims nothing, nor does a post without the form's token.
    assert_eq!(browser.claim_one(&share.token, &csrf, 3).await.status(), 404);
    assert_ne!(browser.claim_one(&share.token, "not-the-token", 1).await.status(), 303);
    assert_eq!(event_kinds(&app, share.id).await, Vec::<String>::new());

    let claim = browser.claim_one(&share.token, &csrf, 2).await;
    assert_eq!(header(&claim, "location"), format!("/s/{}/files/2", share.token));
    let report = browser.fetch_one(&share.token, 2, &[]).await;
    assert_eq!(report.status(), 200);
    assert_eq!(header(&report, "etag"), format!("\"{}\"", sha256(REPORT)));
    assert!(header(&report, "content-disposition").contains("filename*=UTF-8''%E5%A0%B1%E5%91%8A%E6%9B%B8.txt"));
    assert_eq!(report.bytes().await.unwrap().as_ref(), REPORT);
    assert_eq!(browser.fetch_one(&share.token, 0, &[]).await.bytes().await.unwrap().as_ref(), NOTES);
    eventually(Duration::from_secs(10), "two files counted", async || {
        delivered_bytes(&app, share.id).await == (NOTES.len() + REPORT.len()) as i64
    })
    .await;
    assert!(!completed(&app, share.id).await, "completed with a file still missing");

    // Back at the link, this browser is offered the files again; anyone else is not.
    let again = browser.open_link(&share.token).await;
    assert_eq!(again.status, 410);
    let names: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
    assert_eq!(again.texts(".file-item .file-name"), names);
    let elsewhere = app.browser().open_link(&share.token).await;
    assert_eq!(elsewhere.status, 410);
    assert!(elsewhere.texts(".file-item").is_empty(), "another browser is offered the files");

    // The last file in two ranges, its button on that page answering the claimer at once.
    assert_eq!(browser.claim_one(&share.token, &again.csrf_token(), 1).await.status(), 303);
    let big = files[1].1;
    let head = browser.fetch_one(&share.token, 1, &[("Range", "bytes=0-999")]).await;
    assert_eq!(head.status(), 206);
    let etag = header(&head, "etag");
    let mut received = head.bytes().await.unwrap().to_vec();
    eventually(Duration::from_secs(10), "the first range counted", async || {
        delivered_bytes(&app, share.id).await == (NOTES.len() + REPORT.len() + 1000) as i64
    })
    .await;
    assert!(!completed(&app, share.id).await);
    let rest = browser.fetch_one(&share.token, 1, &[("Range", "bytes=1000-"), ("If-Range", &etag)]).await;
    assert_eq!(rest.status(), 206);
    received.extend_from_slice(&rest.bytes().await.unwrap());
    assert!(received == big, "the reassembled file differs");
    eventually(Duration::from_secs(10), "the completed download", async || completions(&app, share.id).await == 1)
        .await;
    assert!(completed(&app, share.id).await);

    // Past the first share's grace its files stay: the other recipient has not downloaded yet.
    assert_eq!(files_in_store(&app), 3);
    app.consumed_ago(share.id, 2 * 24 * 3600).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(files_in_store(&app), 3, "the files went while the other share still needs them");
    // Once theirs ends too, the files go.
    app.expire_share(other_share.id).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(files_in_store(&app), 0);
    let purged = "SELECT count(*) FROM files f JOIN shares s ON s.handover_id = f.handover_id
                   WHERE s.id = $1 AND f.purged_at IS NOT NULL";
    assert_eq!(count(app.db(), purged, share.id).await, 3);
}

async fn a_bundle_in_the_object_store_downloads_resumed_and_by_file_and_its_objects_go_when_both_shares_are_done(
    backend: Backend,
) {
    let server = s3::shared();
    let bucket = server.create_bucket();
    let storage = server.storage_settings(&bucket);
    let app = TestApp::spawn_with(backend, |s| s.storage = storage).await;
    let ([share, other_share], files) = bundle(&app).await;
    let objects = || count_files(&server.bucket_dir(&bucket));
    assert_eq!(objects(), 3, "the three files are objects in the bucket");

    // The ZIP, cut after a third and resumed where it stopped.
    let (browser, csrf) = app.granted_browser(&share).await;
    assert_eq!(browser.claim(&share.token, &csrf).await.status(), 303);
    let first = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(first.status(), 200);
    let (etag, size) = (header(&first, "etag"), header(&first, "content-length").parse::<usize>().unwrap());
    let mut received = cut_after(first, size / 3).await;
    let range = format!("bytes={}-", received.len());
    let rest = browser.fetch_file(&share.token, &[("Range", &range), ("If-Range", &etag)]).await;
    assert_eq!(rest.status(), 206);
    received.extend_from_slice(&rest.bytes().await.unwrap());
    assert_eq!(opened_with_python(&received), entries_of(&files));
    eventually(Duration::from_secs(10), "the completed download", async || completions(&app, share.id).await == 1)
        .await;

    // The other recipient takes the file with the Japanese name alone.
    let (theirs, their_csrf) = app.granted_browser(&other_share).await;
    assert_eq!(theirs.claim_one(&other_share.token, &their_csrf, 2).await.status(), 303);
    let one = theirs.fetch_one(&other_share.token, 2, &[]).await;
    assert_eq!(one.status(), 200);
    assert!(header(&one, "content-disposition").contains("filename*=UTF-8''%E5%A0%B1%E5%91%8A%E6%9B%B8.txt"));
    assert_eq!(one.bytes().await.unwrap().as_ref(), REPORT);

    // Past the first share's grace the objects stay while the other share is under way.
    app.consumed_ago(share.id, 2 * 24 * 3600).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(objects(), 3, "the objects went while the other share still needs them");
    app.consumed_ago(other_share.id, 2 * 24 * 3600).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(objects(), 0, "the objects stay after both shares are done");
}

/// The first mail to `to`, waiting for it to arrive.
async fn eventually_mail_to(app: &TestApp, to: &str) -> ReceivedMail {
    eventually(Duration::from_secs(10), "the mail", async || app.smtp.messages().iter().any(|m| m.to[0] == to)).await;
    app.smtp.messages().into_iter().find(|m| m.to[0] == to).unwrap()
}

both_backends!(
    the_pages_count_the_files_before_the_code_and_list_them_after_it,
    a_zip_cut_mid_way_and_resumed_opens_whole_and_completes_the_download_only_at_its_end,
    files_fetched_one_by_one_complete_the_download_with_the_last_and_go_when_both_shares_are_done,
    a_bundle_in_the_object_store_downloads_resumed_and_by_file_and_its_objects_go_when_both_shares_are_done,
);
