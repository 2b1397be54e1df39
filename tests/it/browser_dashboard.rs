//! The sender's side in a real Chromium: the first-run setup, the empty list, the upload with its
//! progress bar, the link shown once, and the share page that turns to "downloaded" by itself (its
//! htmx polling) while a second browser, the recipient, fetches the file. Then the same pages on a
//! phone.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::json;
use watasu::i18n::Lang;

use crate::support::{
    Backend, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

const SENDER_NAME: &str = "佐藤 花子";
const SENDER_EMAIL: &str = "hanako@example.test";
use crate::support::PASSWORD;
use crate::support::RECIPIENT;
const FILE_NAME: &str = "見積資料一式.bin";
/// Big enough that the throttled upload takes seconds, so its progress can be watched.
const FILE_SIZE: usize = 16 * 1024 * 1024;
/// The upload's speed while it is watched (bytes per second): FILE_SIZE takes about 4 s.
const UPLOAD_THROTTLE: u64 = 4 * 1024 * 1024;

const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const DOWNLOAD_BUTTON: &str = "#step form[action$='/download'] button[type=submit]";

/// A file whose every byte depends on its offset, so a reordered or truncated copy shows.
fn write_test_file(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let content: Vec<u8> = (0..FILE_SIZE).map(|i| (i % 251) as u8).collect();
    let path = dir.join(FILE_NAME);
    std::fs::write(&path, &content).unwrap();
    (path, content)
}

/// Waits until the browser shows `path` (after a form post and its redirect).
async fn wait_for_path(browser: &BrowserSession, path: &str, timeout: Duration) {
    browser.wait_until(&format!("the page at {path}"), timeout, async |b| b.current_path().await == path).await;
}

/// Records every `progress` event of every XHR upload the page starts from now on (tus-js-client
/// sends each chunk with one; the page's own listener, which moves the bar, runs as well). The
/// record is in `sessionStorage`, which outlives the form post that shows the answer.
/// Whether the file's size sits in the value column of the page's facts, beside the file's name:
/// a fact whose parts fell out into the grid's cells would put it under the label.
const SIZE_BESIDE_NAME: &str = "var file = document.querySelector('dl.facts dd.share-file'); \
     var size = file.querySelector('.muted'); \
     return size.getBoundingClientRect().left >= file.previousElementSibling.getBoundingClientRect().right;";

const HOOK_UPLOAD_PROGRESS: &str = "
    sessionStorage.setItem('uploadProgress', '[]');
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (body) {
        this.upload.addEventListener('progress', function (e) {
            const panel = document.getElementById('uploader');
            const bar = document.getElementById('upload-progress');
            const seen = JSON.parse(sessionStorage.getItem('uploadProgress'));
            seen.push({ loaded: e.loaded, total: e.total, t: performance.now(),
                        barHidden: panel ? panel.hidden : null, barValue: bar ? bar.value : null });
            sessionStorage.setItem('uploadProgress', JSON.stringify(seen));
        });
        return send.call(this, body);
    };
    return null;";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sender_sets_up_uploads_and_sees_the_download_without_reloading() {
    let started = Instant::now();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let t = Lang::Ja.text();
    let setup_link = app.setup_link.clone().expect("a fresh install prints a setup link");
    let files = tempfile::tempdir().unwrap();
    let (file_path, content) = write_test_file(files.path());
    let sender = BrowserSession::start(BrowserOptions::desktop()).await;

    // First run: the printed link opens the setup form; submitting it signs the new admin in.
    sender.goto(&setup_link).await;
    assert_eq!(sender.attr("html", "lang").await.as_deref(), Some("ja"));
    assert_eq!(sender.text("h1").await, t.auth.setup_title);
    sender.fill("#name", SENDER_NAME).await;
    sender.fill("#email", SENDER_EMAIL).await;
    sender.fill("#password", PASSWORD).await;
    sender.screenshot("dashboard-1-setup").await;
    sender.click("main form button[type=submit]").await;
    wait_for_path(&sender, "/shares", DEFAULT_WAIT).await;
    assert_eq!(sender.text("h1").await, t.dashboard.shares_title);
    assert!(!sender.exists(".share-row").await);
    assert_eq!(sender.text("main .muted").await, t.dashboard.shares_empty);
    assert!(sender.exists(".dashboard-nav a[href='/shares/new']").await, "no dashboard navigation when signed in");
    sender.screenshot("dashboard-2-shares-empty").await;

    // The new-share form.
    sender.click("main a.button[href='/shares/new']").await;
    wait_for_path(&sender, "/shares/new", DEFAULT_WAIT).await;
    assert_eq!(sender.text("h1").await, t.dashboard.new_share_title);
    assert_eq!(sender.attr("#uploader", "hidden").await.as_deref(), Some("true"));
    sender.screenshot("dashboard-3-new").await;
    sender.fill("#recipient", RECIPIENT).await;
    let file_input = sender.find("input[type=file]").await;
    file_input.send_keys(file_path.to_str().unwrap()).await.expect("choosing the file");
    assert_eq!(sender.execute("return document.getElementById('file').files[0].size;").await, json!(FILE_SIZE));

    // The upload (through tus, as the page's script does it), slowed to UPLOAD_THROTTLE so the bar
    // can be seen moving: the bar shows and fills while the bytes are still going (the document is
    // the form's, not yet the answer).
    sender.execute(HOOK_UPLOAD_PROGRESS).await;
    sender.mark_document().await;
    sender.cdp("Network.enable", json!({})).await;
    sender
        .cdp(
            "Network.emulateNetworkConditions",
            json!({ "offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": UPLOAD_THROTTLE }),
        )
        .await;
    let upload_started = Instant::now();
    sender.click("main form[data-upload] button[type=submit]").await;
    let bar_moving = "(() => { const bar = document.getElementById('upload-progress'); \
                      return !!bar && !document.getElementById('uploader').hidden && bar.value > 0 && bar.value < 100; })()";
    sender.wait_for_js(bar_moving, Duration::from_secs(30)).await;
    let seen_at = upload_started.elapsed();
    // One snapshot at once: each helper call may run axe-core on the new page state, and on a
    // busy machine the 4 s upload could end (and the page navigate) between separate reads.
    let snapshot = sender
        .execute(
            "const q = (css) => document.querySelector(css); \
             return { percent: q('#upload-progress').value, status: q('#upload-status').textContent, \
                      controls: !!q('#uploader [data-upload-pause]') && !!q('#uploader [data-upload-cancel]'), \
                      disabled: q('main form[data-upload] button[type=submit]').disabled, \
                      marked: window.__watasuMarker === 'still-here' };",
        )
        .await;
    let percent = snapshot["percent"].clone();
    let status_text = snapshot["status"].as_str().unwrap_or_default().to_owned();
    let total = watasu::i18n::format::human_size(FILE_SIZE, Lang::Ja);
    assert!(status_text.contains(&total), "the status line says {status_text:?} during the upload");
    assert_eq!(snapshot["controls"], json!(true), "no pause or cancel during the upload");
    assert_eq!(snapshot["disabled"], json!(true), "the submit button can be pressed twice during the upload");
    assert_eq!(snapshot["marked"], json!(true), "the page navigated while the bytes were still going");
    sender.screenshot("dashboard-3b-uploading").await;

    // Then the form is posted with the finished upload: the link, shown once.
    sender.wait_for("#share-link", Duration::from_secs(60)).await;
    let upload_took = upload_started.elapsed();
    sender
        .cdp(
            "Network.emulateNetworkConditions",
            json!({ "offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1 }),
        )
        .await;
    sender.cdp("Network.disable", json!({})).await;
    let link = sender.attr("#share-link", "value").await.expect("the link is shown");
    assert!(link.starts_with(&format!("{}/s/", app.base)), "{link}");
    assert_eq!(sender.text("h1").await, t.dashboard.created_title);
    let progress = sender.execute("return JSON.parse(sessionStorage.getItem('uploadProgress'));").await;
    let events = progress.as_array().cloned().unwrap_or_default();
    let shown = events.iter().filter(|e| e["barHidden"] == json!(false)).count();
    assert!(events.len() >= 2, "the upload fired {} progress events: {progress}", events.len());
    assert!(shown >= 1, "the bar was never visible during a progress event: {progress}");
    assert_eq!(events.last().unwrap()["loaded"], json!(events.last().unwrap()["total"]), "{progress}");
    eprintln!(
        "upload of {FILE_SIZE} bytes at {UPLOAD_THROTTLE} B/s: bar seen moving ({percent}%) after {seen_at:?}, \
         link after {upload_took:?}, {} progress events",
        events.len()
    );
    assert_eq!(sender.execute(SIZE_BESIDE_NAME).await, json!(true), "the created page's file fact is one cell");
    sender.screenshot("dashboard-4-created").await;
    let share_href = sender.attr("a.created-share", "href").await.expect("a link to the share page");
    let share_id: i64 = share_href.trim_start_matches("/shares/").parse().unwrap();

    // The sender opens the share page and leaves it alone.
    sender.click("a.created-share").await;
    wait_for_path(&sender, &share_href, DEFAULT_WAIT).await;
    sender.wait_for("#share-status [data-status=waiting]", DEFAULT_WAIT).await;
    assert_eq!(sender.text(".share-recipient").await, RECIPIENT);
    assert!(sender.text(".share-file").await.starts_with(FILE_NAME));
    assert_eq!(sender.execute(SIZE_BESIDE_NAME).await, json!(true), "the share page's file fact is one cell");
    assert_eq!(sender.attr("#share-live", "hx-trigger").await.as_deref(), Some("every 4s"));
    assert_eq!(sender.execute("return typeof htmx;").await, "object", "htmx did not load on the share page");
    sender.mark_document().await;

    // Someone else, in their own browser: the link, the address, the code from the mail, the file.
    let downloads = tempfile::tempdir().unwrap();
    let recipient = BrowserSession::start(BrowserOptions::desktop().downloads_to(downloads.path())).await;
    recipient.goto(&link).await;
    recipient.fill("input[name=email]", RECIPIENT).await;
    recipient.click(EMAIL_SUBMIT).await;
    recipient.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = app.smtp.code_for(RECIPIENT).await;
    recipient.fill("#code", &code).await;
    recipient.click(CODE_SUBMIT).await;
    recipient.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    assert_eq!(recipient.text("#step .file-name").await, FILE_NAME);
    recipient.click(DOWNLOAD_BUTTON).await;
    let file = recipient.wait_for_download(downloads.path(), Duration::from_secs(60)).await;
    let downloaded_at = Instant::now();
    assert_eq!(file.file_name().and_then(|n| n.to_str()), Some(FILE_NAME), "saved as {file:?}");
    assert!(std::fs::read(&file).unwrap() == content, "the downloaded bytes differ from the uploaded ones");
    recipient.close().await;

    // Meanwhile the sender's page turned to "downloaded" by its own polling: no reload, no
    // navigation by anyone.
    sender.wait_for("#share-status [data-status=downloaded]", Duration::from_secs(15)).await;
    let noticed_after = downloaded_at.elapsed();
    assert!(sender.document_is_marked().await, "the share page was reloaded or navigated");
    assert_eq!(sender.current_path().await, share_href);
    assert_eq!(sender.text("#share-status .status").await, t.dashboard.status_downloaded);
    assert!(sender.exists("#share-live .timeline li[data-kind=downloaded]").await, "no download in the timeline");
    // "Downloaded" is not final yet (the GC deletes the file later and the page says so), so the
    // polling goes on.
    let polled = sender.attr("#share-live", "hx-get").await.unwrap_or_default();
    assert!(polled.starts_with(&format!("/shares/{share_id}/live?seen=downloaded.")), "{polled}");
    eprintln!("the share page showed the download {noticed_after:?} after the file was saved");
    sender.screenshot("dashboard-5-downloaded").await;

    sender.goto(&format!("{}/shares", app.base)).await;
    assert_eq!(sender.attr(".share-row", "data-status").await.as_deref(), Some("downloaded"));
    sender.screenshot("dashboard-6-shares").await;
    for (path, name) in [("/team", "dashboard-7-team"), ("/account", "dashboard-8-account")] {
        sender.goto(&format!("{}{path}", app.base)).await;
        sender.wait_for("main h1", DEFAULT_WAIT).await;
        sender.screenshot(name).await;
    }
    let violations = sender.csp_violations().await;
    sender.close().await;

    // The same pages on a phone, signed in from a fresh browser.
    let phone = BrowserSession::start(BrowserOptions::phone()).await;
    phone.goto(&format!("{}/login", app.base)).await;
    phone.fill("#email", SENDER_EMAIL).await;
    phone.fill("#password", PASSWORD).await;
    phone.click("main form button[type=submit]").await;
    wait_for_path(&phone, "/shares", DEFAULT_WAIT).await;
    assert_eq!(phone.execute("return [window.innerWidth, window.innerHeight];").await, json!([390, 844]));
    assert_eq!(phone.attr(".share-row", "data-status").await.as_deref(), Some("downloaded"));
    phone.assert_no_horizontal_overflow("/shares").await;
    phone.screenshot("dashboard-phone-1-shares").await;

    phone.goto(&format!("{}/shares/{share_id}", app.base)).await;
    phone.wait_for("#share-status [data-status=downloaded]", DEFAULT_WAIT).await;
    phone.assert_no_horizontal_overflow("/shares/{id}").await;
    phone.screenshot("dashboard-phone-2-share").await;
    phone.screenshot_full_page("dashboard-phone-2-share-full").await;

    phone.goto(&format!("{}/shares/new", app.base)).await;
    phone.wait_for("form[data-upload]", DEFAULT_WAIT).await;
    phone.assert_no_horizontal_overflow("/shares/new").await;
    let button = phone
        .execute(
            "const r = document.querySelector('form[data-upload] button[type=submit]').getBoundingClientRect(); \
             return [r.height, r.top + scrollY, r.bottom + scrollY];",
        )
        .await;
    eprintln!("phone /shares/new: submit button {button}, screen 844 px");
    assert!(button[0].as_f64().unwrap() >= 44.0, "the upload button is too small to tap: {button}");
    phone.screenshot("dashboard-phone-3-new").await;
    phone.screenshot_full_page("dashboard-phone-3-new-full").await;
    for (path, name) in [("/team", "dashboard-phone-4-team"), ("/account", "dashboard-phone-5-account")] {
        phone.goto(&format!("{}{path}", app.base)).await;
        phone.wait_for("main h1", DEFAULT_WAIT).await;
        phone.assert_no_horizontal_overflow(path).await;
        phone.screenshot(name).await;
    }
    let phone_violations = phone.csp_violations().await;
    phone.close().await;

    assert_eq!(violations, Vec::<String>::new(), "CSP violations on the sender's desktop browser");
    assert_eq!(phone_violations, Vec::<String>::new(), "CSP violations on the sender's phone");
    app.stop().await;
    eprintln!("sender walk: {:?}", started.elapsed());
}
