//! Files coming back, walked end to end in headless Chromium against the real binary behind a
//! real nginx that refuses bodies over 100 MB: a sender asks an address for files on the
//! dashboard; a stranger holding the link (without the mailbox) stores nothing; the uploader
//! proves the mailbox and sends a 120 MB file through tus while the server is killed (-9) and
//! started again, and the upload resumes; the uploader sends a second file from a browser without
//! JavaScript and finishes; the sender is mailed, downloads the ZIP, and once the retention has
//! passed (time moved in the database) the bytes are gone.
//!
//! With the real clamd, the uploader's page (files sent through tus) shows the EICAR file refused,
//! and a clean file held while clamd is stopped and released when it comes back; the sender can
//! fetch the released file only.
//!
//! A reply from a recipient's download page is walked by its own browser test,
//! `browser_file_requests::a_reply_from_the_download_step_passes_axe_in_both_languages` (its rules
//! over HTTP by `replies`); the scan's pages in both languages and widths by `browser_scan`.

use std::{path::Path, time::Duration};

use crate::{
    both_backends,
    browser_uploads::{
        CHUNK, Deployment, MB, SERVE_ARGS, UPLOAD_WAIT, sign_in_through, throttle, wait_for_offset, write_source_of,
    },
    fault_drills::lines,
    file_requests::{make_request, roomy},
    scan::{held::backoff_passes, inbound::wait_for_inbound, scanning_app},
    support::{
        Backend, Page,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        clamd::{Clamd, EICAR, EICAR_NAME},
        clock::{DAY, shift_back},
        count, eventually,
        installation::kill_9,
    },
};

const UPLOADER: &str = "client@example.test";
const STRANGER: &str = "stranger@example.test";
/// Over the proxy's cap, so it can only arrive in chunks.
const BIG: u64 = 120 * MB;
const SMALL: &str = "%PDF the signed statement";

/// The request link's path in the mail the uploader received.
fn link_path_in_mail(deployment: &Deployment) -> String {
    let mail = deployment.inst.smtp.messages().into_iter().find(|m| m.to == [UPLOADER]).expect("the uploader's mail");
    let text = mail.text();
    let start = text.find("/s/").unwrap_or_else(|| panic!("no link in {text}"));
    text[start..].split_whitespace().next().unwrap().to_owned()
}

/// Files in the data folder's store that are not partial uploads.
fn stored_files(deployment: &Deployment) -> usize {
    std::fs::read_dir(deployment.inst.files_dir()).map_or(0, |dir| {
        dir.filter_map(Result::ok).filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count()
    })
}

/// Proves the mailbox on the link in `browser`, with the code from the mail.
async fn verify(deployment: &Deployment, browser: &BrowserSession, link: &str) {
    let before = deployment.inst.smtp.messages().len();
    browser.goto(link).await;
    browser.fill("input[name=email]", UPLOADER).await;
    browser.click("#step form[action$='/email'] button[type=submit]").await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = deployment.inst.smtp.code_for_after(UPLOADER, before).await;
    browser.fill("#code", &code).await;
    browser.click("#step form[action$='/code'] button[type=submit]").await;
    browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
}

/// A stranger holding the link but not the mailbox: in Chromium, typing their own address leads
/// to a code that never reaches them, and no upload form; a client posting to the link's tus
/// endpoint and form with the page's session and CSRF token is refused, and nothing is stored.
async fn a_stranger_uploads_nothing(deployment: &Deployment, link: &str) {
    let stranger = BrowserSession::start(BrowserOptions::desktop()).await;
    stranger.goto(link).await;
    stranger.fill("input[name=email]", STRANGER).await;
    stranger.click("#step form[action$='/email'] button[type=submit]").await;
    stranger.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert!(stranger.find_all("#request-files").await.is_empty(), "an upload form before the code");
    stranger.close().await;
    let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
    let landing = Page::read(client.get(link).send().await.unwrap()).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let csrf = landing.csrf_token();
    let tus = client
        .post(format!("{link}/uploads"))
        .header("Tus-Resumable", "1.0.0")
        .header("X-CSRF-Token", &csrf)
        .header("Sec-Fetch-Site", "same-origin")
        .header("Upload-Length", "10")
        .send()
        .await
        .unwrap();
    assert_eq!(tus.status(), 403);
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf)
        .part("file", reqwest::multipart::Part::bytes(b"stranger".to_vec()).file_name("x.txt"));
    let posted =
        client.post(format!("{link}/upload")).header("Sec-Fetch-Site", "same-origin").multipart(form).send().await;
    assert_eq!(posted.unwrap().status(), 403);
    assert!(lines(&deployment.inst.db, "SELECT public_id FROM uploads").await.is_empty());
    assert_eq!(stored_files(deployment), 0, "the stranger stored nothing");
}

/// The text of the ZIP's end, where its central directory names the entries.
fn zip_names(archive: &Path) -> String {
    let bytes = std::fs::read(archive).unwrap();
    assert!(bytes.starts_with(b"PK"), "not a ZIP");
    assert!(bytes.len() as u64 > BIG, "the ZIP holds {} bytes", bytes.len());
    String::from_utf8_lossy(&bytes[bytes.len() - 64 * 1024..]).into_owned()
}

async fn a_request_answered_across_a_killed_server_reaches_the_sender_and_goes_after_the_retention(backend: Backend) {
    let mut deployment = Deployment::new(backend).await;
    let base = deployment.nginx.base();
    let folder = tempfile::tempdir().unwrap();
    let (big, big_digest) = write_source_of(folder.path(), BIG);
    let small = folder.path().join("明細.pdf");
    std::fs::write(&small, SMALL).unwrap();

    // The sender asks the address for files on the dashboard; the link goes to the uploader.
    let downloads = tempfile::tempdir().unwrap();
    let sender = BrowserSession::start(BrowserOptions::desktop().downloads_to(downloads.path())).await;
    sign_in_through(&deployment, &sender).await;
    sender.goto(&format!("{base}/requests")).await;
    sender.fill("#uploader", UPLOADER).await;
    sender.fill("#request-message", "Your signed statements, please.").await;
    sender.click("main form[action$='/requests'] button[type=submit]").await;
    sender.wait_for("#request-state[data-state=open]", DEFAULT_WAIT).await;
    let request_page = sender.current_path().await;
    let request_id: i64 = request_page.rsplit('/').next().unwrap().parse().unwrap();
    eventually(Duration::from_secs(20), "the uploader's mail", async || {
        deployment.inst.smtp.messages().iter().any(|m| m.to == [UPLOADER])
    })
    .await;
    let link = format!("{base}{}", link_path_in_mail(&deployment));

    a_stranger_uploads_nothing(&deployment, &link).await;

    // The uploader, with JavaScript: the big file goes through tus, slowed so the kill lands
    // mid-upload; the page resumes the same upload once the server is back.
    let uploader = BrowserSession::start(BrowserOptions::desktop()).await;
    verify(&deployment, &uploader, &link).await;
    throttle(&uploader, 20 * MB).await;
    uploader.find("#request-files").await.send_keys(big.to_str().unwrap()).await.expect("choosing the file");
    uploader.click("#step form[data-upload] button[type=submit]").await;
    let at_kill = wait_for_offset(&deployment, BIG / 3).await;
    kill_9(&mut deployment.server);
    let digests = lines(&deployment.inst.db, "SELECT COALESCE(sha256, 'none') FROM uploads").await;
    assert_eq!(digests, ["none"], "nothing partial became a file");
    assert!(lines(&deployment.inst.db, "SELECT sha256 FROM files").await.is_empty());
    deployment.server = deployment.inst.start_on(&deployment.addr, &SERVE_ARGS);
    uploader.wait_for(".arrived .file-item", UPLOAD_WAIT).await;
    assert_eq!(uploader.text(".arrived .file-sha256").await, big_digest);
    let proxied = deployment.proxied();
    let uploads = format!("{}/uploads", link.strip_prefix(&base).unwrap());
    let created = proxied.iter().filter(|(m, p, s, _)| m == "POST" && *p == uploads && *s == 201).count();
    assert_eq!(created, 1, "one upload, resumed: {proxied:?}");
    let patches: Vec<u64> =
        proxied.iter().filter(|(m, p, _, _)| m == "PATCH" && p.starts_with(&uploads)).map(|(.., b)| *b).collect();
    assert!(patches.iter().all(|bytes| *bytes < 100 * MB), "a PATCH went past the cap: {patches:?}");
    let sent: u64 = patches.iter().sum();
    assert!(sent < BIG + 2 * CHUNK, "{sent} bytes sent for {BIG} (killed at {at_kill}): started over");
    uploader.close().await;

    // The second file from a browser without JavaScript: the mailbox is proved again there, the
    // plain form posts the file, and the uploader finishes with a note.
    let plain = BrowserSession::start(BrowserOptions::desktop().without_javascript()).await;
    verify(&deployment, &plain, &link).await;
    plain.find("#request-files").await.send_keys(small.to_str().unwrap()).await.expect("choosing the file");
    plain.click("#step form[action$='/upload'] button[type=submit]").await;
    plain
        .wait_until("the second file", DEFAULT_WAIT, async |b| b.find_all(".arrived .file-item").await.len() == 2)
        .await;
    let before = deployment.inst.smtp.messages().len();
    plain.fill("#uploader-note", "Both statements, signed.").await;
    plain.click("#step form[action$='/finish'] button[type=submit]").await;
    plain.wait_for("section[data-status='410']", DEFAULT_WAIT).await;
    plain.close().await;

    // The sender is mailed, with the verified address and each file's digest.
    let small_digest = watasu::secret::sha256_hex(SMALL);
    let mails = deployment.inst.smtp.wait_for(before + 1, Duration::from_secs(20)).await;
    let arrival = mails.iter().find(|m| m.to == [crate::browser_uploads::SENDER]).expect("the sender's mail");
    let text = arrival.text();
    assert!(text.contains(UPLOADER) && text.contains(&big_digest) && text.contains(&small_digest), "{text}");
    // Every mail queued since the stranger asked has gone out; none went to the stranger.
    let strays: Vec<_> = mails.iter().filter(|m| m.to == [STRANGER]).collect();
    assert!(strays.is_empty(), "a code went to an address the request does not name");

    // The sender downloads everything as one ZIP.
    sender.goto(&format!("{base}{request_page}")).await;
    sender.wait_for("#request-state[data-state=answered]", DEFAULT_WAIT).await;
    sender.click("#download-all").await;
    let archive = sender.wait_for_download(downloads.path(), UPLOAD_WAIT).await;
    let names = zip_names(&archive);
    assert!(names.contains("大きな資料.bin") && names.contains("明細.pdf"), "{names}");
    assert_eq!(stored_files(&deployment), 2);

    // The retention passes (moved in the database, not waited for): the GC removes the bytes.
    let filter = format!("id = {request_id}");
    shift_back(&deployment.inst.db, "shares", &["consumed_at", "expires_at"], 8 * DAY, &filter).await;
    deployment.inst.run(&["gc"]);
    assert_eq!(stored_files(&deployment), 0, "the bytes are gone after the retention");
    sender.goto(&format!("{base}{request_page}")).await;
    sender.wait_for("#request-state[data-state=purged]", DEFAULT_WAIT).await;
    sender.close().await;
}

/// The uploader's files as their page shows them: each one's scan mark, in order.
async fn scan_marks(browser: &BrowserSession, link: &str) -> Vec<String> {
    browser.goto(link).await;
    browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
    let mut marks = Vec::new();
    for item in browser.find_all(".arrived .file-item").await {
        let mark = item.find(fantoccini::Locator::Css("[data-scan]")).await.expect("a scan mark");
        marks.push(mark.attr("data-scan").await.unwrap().unwrap_or_default());
    }
    marks
}

/// Chooses `file` on the upload step and sends it (through tus: the page has JavaScript).
async fn send_file(browser: &BrowserSession, file: &Path, files_after: usize) {
    browser.find("#request-files").await.send_keys(file.to_str().unwrap()).await.expect("choosing the file");
    browser.click("#step form[data-upload] button[type=submit]").await;
    browser
        .wait_until("the file's arrival", DEFAULT_WAIT, async |b| {
            b.find_all(".arrived .file-item").await.len() == files_after
        })
        .await;
}

async fn the_scan_refuses_eicar_and_holds_a_clean_file_while_clamd_is_down(backend: Backend) {
    let mut clamd = tokio::task::spawn_blocking(Clamd::start).await.unwrap();
    let app = scanning_app(backend, &clamd.url(), |_| {}).await;
    let request = make_request(&app, roomy()).await;
    let link = format!("{}/s/{}", app.base, request.token);
    let folder = tempfile::tempdir().unwrap();
    let (eicar, clean) = (folder.path().join("invoice.com"), folder.path().join("notes.txt"));
    std::fs::write(&eicar, EICAR).unwrap();
    std::fs::write(&clean, b"harmless notes").unwrap();

    let uploader = BrowserSession::start(BrowserOptions::desktop()).await;
    let before = app.smtp.messages().len();
    uploader.goto(&link).await;
    uploader.fill("input[name=email]", crate::file_requests::UPLOADER).await;
    uploader.click("#step form[action$='/email'] button[type=submit]").await;
    uploader.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = app.smtp.code_for_after(crate::file_requests::UPLOADER, before).await;
    uploader.fill("#code", &code).await;
    uploader.click("#step form[action$='/code'] button[type=submit]").await;
    uploader.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;

    // clamd running: the EICAR file is refused, and the page says which file and why.
    send_file(&uploader, &eicar, 1).await;
    wait_for_inbound(&app, &request, &["infected"]).await;
    assert_eq!(scan_marks(&uploader, &link).await, ["infected"]);
    let refused = uploader.text(".arrived .file-item").await;
    assert!(refused.contains("invoice.com") && refused.contains(EICAR_NAME), "{refused}");

    // clamd stopped: a clean file is held, not released.
    let mut clamd = tokio::task::spawn_blocking(move || {
        clamd.stop();
        clamd
    })
    .await
    .unwrap();
    send_file(&uploader, &clean, 2).await;
    const TRIED: &str = "SELECT count(*) FROM files f JOIN shares s ON s.handover_id = f.handover_id
                          WHERE s.id = $1 AND f.scan_state = 'pending' AND f.scan_attempts >= 1";
    eventually(Duration::from_secs(30), "a scan of the clean file with clamd down", async || {
        count(app.db(), TRIED, request.id).await == 1
    })
    .await;
    assert_eq!(scan_marks(&uploader, &link).await, ["infected", "pending"]);

    // clamd back: the clean file is released (clamd runs until it is dropped at the end).
    let _clamd = tokio::task::spawn_blocking(move || {
        clamd.start_again();
        clamd
    })
    .await
    .unwrap();
    backoff_passes(&app).await;
    wait_for_inbound(&app, &request, &["infected", "clean"]).await;
    assert_eq!(scan_marks(&uploader, &link).await, ["infected", "clean"]);
    uploader.click("#step form[action$='/finish'] button[type=submit]").await;
    uploader.wait_for("section[data-status='410']", DEFAULT_WAIT).await;
    uploader.close().await;

    // The sender may fetch the released file, and only that one.
    let sender = BrowserSession::start(BrowserOptions::desktop()).await;
    sender.sign_in(&app.base, crate::file_requests::SENDER).await;
    sender.goto(&format!("{}/requests/{}", app.base, request.id)).await;
    sender.wait_for("#request-state[data-state=answered]", DEFAULT_WAIT).await;
    assert_eq!(sender.find_all(".download-one").await.len(), 1);
    sender.close().await;
    app.stop().await;
}

both_backends!(
    a_request_answered_across_a_killed_server_reaches_the_sender_and_goes_after_the_retention,
    the_scan_refuses_eicar_and_holds_a_clean_file_while_clamd_is_down,
);
