//! The recipient's whole walk in a real Chromium: the link, the address, a wrong code, the right
//! code, the one download, and the "already downloaded" page after it. With JavaScript (each step
//! an htmx fragment swap in one document), without it (each step a full page load), and on a phone.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::Value;
use watasu::i18n::Lang;

use crate::support::{
    Backend, TestApp, TestShare,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

use crate::support::RECIPIENT;
const SENDER_NAME: &str = "佐藤 花子";
const FILE_NAME: &str = "見積書.pdf";
/// Not a real PDF: the bytes only have to come back unchanged.
const CONTENT: &[u8] = b"%PDF-1.4\n% watasu browser test\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n";

const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const DOWNLOAD_BUTTON: &str = "#step form[action$='/download'] button[type=submit]";
const GONE_CARD: &str = "section.card[data-status='410']";

/// A one-hour share of `file_name` from a sender with a Japanese name to [`RECIPIENT`].
async fn share_of(app: &TestApp, file_name: &str, content: &'static [u8]) -> TestShare {
    let sender = app.create_sender("sender@example.test", SENDER_NAME).await;
    app.fake_share().sender(sender).file(file_name, content).create().await
}

/// A six-digit code that is not `code`.
fn wrong_code(code: &str) -> &'static str {
    if code == "000000" { "111111" } else { "000000" }
}

/// The code of the `n`-th mail (1-based) to arrive, which must be for [`RECIPIENT`].
async fn code_from_mail(app: &TestApp, n: usize) -> String {
    let mail = app.smtp.wait_for(n, Duration::from_secs(10)).await[n - 1].clone();
    assert_eq!(mail.to, [RECIPIENT]);
    mail.code().unwrap_or_else(|| panic!("no code in {:?}", mail.data))
}

/// The HTTP status of the document the browser shows now (Navigation Timing's `responseStatus`).
async fn document_status(browser: &BrowserSession) -> Value {
    browser
        .execute(
            "const entries = performance.getEntriesByType('navigation'); \
             return entries.length ? entries[0].responseStatus : null;",
        )
        .await
}

/// Whether the focused element matches `css`.
async fn focus_is_on(browser: &BrowserSession, css: &str) -> bool {
    browser
        .execute_with(
            "return !!document.activeElement && document.activeElement.matches(arguments[0]);",
            vec![Value::from(css)],
        )
        .await
        == Value::Bool(true)
}

/// Waits until `#code-status` says something (after a swap or a page load).
async fn wait_for_code_error(browser: &BrowserSession) -> String {
    let script = "const s = document.querySelector('#code-status'); return s ? s.textContent.trim() : '';";
    browser
        .wait_until("an error in #code-status", DEFAULT_WAIT, async |b| {
            b.execute(script).await.as_str().is_some_and(|s| !s.is_empty())
        })
        .await;
    browser.execute(script).await.as_str().unwrap_or_default().to_owned()
}

/// Waits for the one finished download and checks its name and bytes.
async fn assert_downloaded(browser: &BrowserSession, dir: &Path, name: &str, content: &[u8]) {
    let file = browser.wait_for_download(dir, Duration::from_secs(20)).await;
    assert_eq!(file.file_name().and_then(|n| n.to_str()), Some(name), "saved as {file:?}");
    assert_eq!(std::fs::read(&file).unwrap(), content, "the downloaded bytes differ");
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn sha256_of(content: &[u8]) -> String {
    watasu::secret::sha256_hex(std::str::from_utf8(content).expect("test content is text"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_recipient_walks_the_whole_flow_with_javascript_on() {
    let started = Instant::now();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let share = share_of(&app, FILE_NAME, CONTENT).await;
    let downloads = tempfile::tempdir().unwrap();
    let browser = BrowserSession::start(BrowserOptions::desktop().downloads_to(downloads.path())).await;
    let t = Lang::Ja.text();
    let share_path = format!("/s/{}", share.token);
    let link = format!("{}{share_path}", app.base);

    // The landing page: who sent something, not what.
    browser.goto(&link).await;
    assert_eq!(browser.attr("html", "lang").await.as_deref(), Some("ja"));
    assert_eq!(browser.execute("return typeof htmx;").await, "object", "htmx did not load");
    assert_eq!(browser.attr("#step", "data-step").await.as_deref(), Some("email"));
    assert_eq!(browser.text("h1").await, t.recipient.landing_title);
    assert!(browser.text("#step .lead").await.contains(SENDER_NAME));
    assert!(!browser.source().await.contains(FILE_NAME), "the landing page names the file");
    browser.screenshot("recipient-1-landing").await;

    // The address: the code step is swapped in, in the same document, at the same URL.
    browser.mark_document().await;
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert!(browser.document_is_marked().await, "the code step came with a full page load");
    assert_eq!(browser.current_path().await, share_path);
    assert_eq!(browser.text("h1").await, t.recipient.code_sent_title);
    assert_eq!(browser.attr("#code", "autocomplete").await.as_deref(), Some("one-time-code"));
    assert_eq!(browser.attr("#code", "inputmode").await.as_deref(), Some("numeric"));
    assert_eq!(browser.text("#code-status").await, "", "an error before any code was typed");
    browser.screenshot("recipient-2-code").await;
    let code = code_from_mail(&app, 1).await;

    // A wrong code: the error in the live region, still the same document. (Where focus goes
    // after each swap: `focus_follows_each_swapped_step`.)
    browser.fill("#code", wrong_code(&code)).await;
    browser.click(CODE_SUBMIT).await;
    let error = wait_for_code_error(&browser).await;
    assert!(error.starts_with(t.recipient.code_wrong) && error.ends_with('4'), "{error:?}");
    assert_eq!(browser.attr("#code-status", "aria-live").await.as_deref(), Some("polite"));
    assert_eq!(browser.attr("#code-status", "role").await.as_deref(), Some("status"));
    assert!(browser.document_is_marked().await, "the wrong code came back with a full page load");
    assert_eq!(browser.attr("#step", "data-step").await.as_deref(), Some("code"));
    browser.screenshot("recipient-3-wrong-code").await;

    // The right code: the download step, swapped in.
    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    assert!(browser.document_is_marked().await, "the download step came with a full page load");
    assert_eq!(browser.current_path().await, share_path);
    assert_eq!(browser.text("h1").await, t.recipient.download_title);
    assert_eq!(browser.text("#step .file-name").await, FILE_NAME);
    assert!(browser.text("#step .file-size").await.contains("バイト"));
    browser.click("#step .file-details summary").await;
    assert_eq!(browser.text("#step .file-sha256").await, sha256_of(CONTENT));
    assert_eq!(browser.text("#step .notice").await, t.recipient.download_once_warning.replace('|', ""));
    assert_eq!(browser.text(DOWNLOAD_BUTTON).await, t.recipient.download_button);
    browser.screenshot("recipient-4-download").await;

    // The download: a plain form POST that saves the file under its Japanese name (filename*)
    // and leaves the page where it is.
    browser.click(DOWNLOAD_BUTTON).await;
    assert_downloaded(&browser, downloads.path(), FILE_NAME, CONTENT).await;
    assert!(browser.document_is_marked().await, "the download replaced the page");
    // The page says the download started and takes no second click.
    browser.wait_for("#download-started:not([hidden])", DEFAULT_WAIT).await;
    assert_eq!(browser.text("#download-started").await, t.recipient.download_started);
    assert_eq!(browser.attr(DOWNLOAD_BUTTON, "disabled").await.as_deref(), Some("true"));
    browser.screenshot("recipient-5-started").await;

    // The second attempt (a back button, a stale tab: opening the link again) gets the 410 page.
    browser.goto(&link).await;
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    assert_eq!(document_status(&browser).await, 410);
    assert_eq!(browser.text("h1").await, Lang::Ja.text().recipient.downloaded_title.replace('|', ""));
    assert_eq!(files_in(downloads.path()), [FILE_NAME]);
    browser.screenshot("recipient-6-gone").await;
    assert!(!browser.exists("#step").await);

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
    app.stop().await;
    eprintln!("javascript-on walk: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_recipient_walks_the_whole_flow_with_javascript_off() {
    let started = Instant::now();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let share = share_of(&app, FILE_NAME, CONTENT).await;
    let downloads = tempfile::tempdir().unwrap();
    let browser =
        BrowserSession::start(BrowserOptions::desktop().without_javascript().downloads_to(downloads.path())).await;
    let t = Lang::Ja.text();
    let share_path = format!("/s/{}", share.token);
    let link = format!("{}{share_path}", app.base);

    browser.goto(&link).await;
    // The page's scripts really did not run (WebDriver's own still do).
    assert_eq!(browser.execute("return typeof htmx;").await, "undefined");
    assert_eq!(browser.attr("#step", "data-step").await.as_deref(), Some("email"));
    assert_eq!(browser.text("h1").await, t.recipient.landing_title);
    browser.screenshot("recipient-nojs-1-landing").await;

    // The address: a full page load of the code step.
    browser.mark_document().await;
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert!(!browser.document_is_marked().await, "the form did not load a new page");
    assert!(browser.current_path().await.starts_with(&share_path));
    assert_eq!(document_status(&browser).await, 200);
    assert_eq!(browser.text("h1").await, t.recipient.code_sent_title);
    browser.screenshot("recipient-nojs-2-code").await;
    let code = code_from_mail(&app, 1).await;

    // A wrong code: the code step again, with the error, as a new page.
    browser.mark_document().await;
    browser.fill("#code", wrong_code(&code)).await;
    browser.click(CODE_SUBMIT).await;
    let error = wait_for_code_error(&browser).await;
    assert!(error.starts_with(t.recipient.code_wrong) && error.ends_with('4'), "{error:?}");
    assert!(!browser.document_is_marked().await, "the wrong code did not load a new page");
    assert_eq!(browser.attr("#step", "data-step").await.as_deref(), Some("code"));
    browser.screenshot("recipient-nojs-3-wrong-code").await;

    // The right code: 303 back to the link, which now shows the download step.
    browser.mark_document().await;
    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    assert!(!browser.document_is_marked().await);
    assert_eq!(browser.current_path().await, share_path, "the right code was not redirected to the link");
    assert_eq!(browser.navigation_type().await, "navigate");
    assert_eq!(browser.text("#step .file-name").await, FILE_NAME);
    assert_eq!(browser.text("#step .notice").await, t.recipient.download_once_warning.replace('|', ""));
    browser.screenshot("recipient-nojs-4-download").await;

    browser.mark_document().await;
    browser.click(DOWNLOAD_BUTTON).await;
    assert_downloaded(&browser, downloads.path(), FILE_NAME, CONTENT).await;
    assert!(browser.document_is_marked().await, "the download replaced the page");

    // A second click once the delivery grace is over (within it, the same browser may fetch the
    // file again: resumed_downloads) gets the 410 page.
    app.consumed_ago(share.id, 16 * 60).await;
    browser.click(DOWNLOAD_BUTTON).await;
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    assert_eq!(document_status(&browser).await, 410);
    assert_eq!(browser.text("h1").await, Lang::Ja.text().recipient.downloaded_title.replace('|', ""));
    assert_eq!(files_in(downloads.path()), [FILE_NAME]);
    browser.screenshot("recipient-nojs-5-gone").await;

    browser.goto(&link).await;
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    assert_eq!(document_status(&browser).await, 410);

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
    app.stop().await;
    eprintln!("javascript-off walk: {:?}", started.elapsed());
}

/// After each swap, focus moves into the new step (app.js's `htmx:afterSettle` handler), so a
/// keyboard or screen reader user lands on the code field, then on the download button, and a
/// phone opens its number pad.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn focus_follows_each_swapped_step() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let share = share_of(&app, FILE_NAME, CONTENT).await;
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;
    browser.goto(&format!("{}/s/{}", app.base, share.token)).await;

    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert!(focus_is_on(&browser, "#code").await, "focus is not on the code field after the swap");

    let code = code_from_mail(&app, 1).await;
    browser.fill("#code", wrong_code(&code)).await;
    browser.click(CODE_SUBMIT).await;
    wait_for_code_error(&browser).await;
    assert!(focus_is_on(&browser, "#code").await, "focus is not back on the code field after a wrong code");

    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    assert!(focus_is_on(&browser, DOWNLOAD_BUTTON).await, "focus is not on the download button after the swap");

    browser.close().await;
    app.stop().await;
}

/// Nothing sticks out sideways, and the step's main button is a comfortable touch target.
async fn assert_fits_phone(browser: &BrowserSession, what: &str) {
    let widths = browser.execute("return [document.documentElement.scrollWidth, window.innerWidth];").await;
    let (scroll_width, inner_width) = (widths[0].as_f64().unwrap(), widths[1].as_f64().unwrap());
    assert!(scroll_width <= inner_width, "{what}: the page is {scroll_width} px wide on a {inner_width} px phone");
    let layout = browser
        .execute(
            "const b = document.querySelector('#step .button-block, .card .button'); \
             if (!b) return null; const r = b.getBoundingClientRect(); \
             const n = document.querySelector('#step .notice'); const w = n && n.getBoundingClientRect(); \
             return [r.height, r.top + scrollY, r.bottom + scrollY, innerHeight, \
                     w && w.top + scrollY, w && w.bottom + scrollY];",
        )
        .await;
    let height = layout[0].as_f64().unwrap_or_else(|| panic!("{what}: no main button"));
    assert!(height >= 44.0, "{what}: the main button is {height} px tall");
    // Where the button (and the download-once warning) sit against the screen's height: for the
    // report, not a rule.
    let at = |i: usize| layout[i].as_f64();
    let warning = match (at(4), at(5)) {
        (Some(top), Some(bottom)) => format!(", once-only warning at {top:.0}..{bottom:.0} px"),
        _ => String::new(),
    };
    let (top, bottom, screen) = (at(1).unwrap_or_default(), at(2).unwrap_or_default(), at(3).unwrap_or_default());
    eprintln!("{what}: main button {height:.0} px tall at {top:.0}..{bottom:.0} px{warning}, screen {screen} px");
}

/// The walk on a phone in `lang`, screenshots named `recipient-phone-{prefix}…`.
async fn phone_walk(lang: Lang, prefix: &str, file_name: &str) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let share = share_of(&app, file_name, CONTENT).await;
    let downloads = tempfile::tempdir().unwrap();
    let options = BrowserOptions::phone().language(lang.code()).downloads_to(downloads.path());
    let browser = BrowserSession::start(options).await;
    let t = lang.text();
    let link = format!("{}/s/{}", app.base, share.token);

    browser.goto(&link).await;
    assert_eq!(browser.execute("return [window.innerWidth, window.innerHeight];").await, serde_json::json!([390, 844]));
    assert_eq!(browser.attr("html", "lang").await.as_deref(), Some(lang.code()));
    assert_eq!(browser.text("h1").await, t.recipient.landing_title);
    assert_fits_phone(&browser, &format!("{prefix}landing")).await;
    browser.screenshot(&format!("recipient-phone-{prefix}1-landing")).await;
    browser.screenshot_full_page(&format!("recipient-phone-{prefix}1-landing-full")).await;

    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert_eq!(browser.text("h1").await, t.recipient.code_sent_title);
    assert_fits_phone(&browser, &format!("{prefix}code")).await;
    browser.screenshot(&format!("recipient-phone-{prefix}2-code")).await;
    let code = code_from_mail(&app, 1).await;

    browser.fill("#code", wrong_code(&code)).await;
    browser.click(CODE_SUBMIT).await;
    wait_for_code_error(&browser).await;
    assert_fits_phone(&browser, &format!("{prefix}wrong code")).await;
    browser.screenshot(&format!("recipient-phone-{prefix}3-wrong-code")).await;

    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    assert_eq!(browser.text("#step .file-name").await, file_name);
    assert_fits_phone(&browser, &format!("{prefix}download")).await;
    browser.screenshot(&format!("recipient-phone-{prefix}4-download")).await;
    browser.screenshot_full_page(&format!("recipient-phone-{prefix}4-download-full")).await;

    browser.click(DOWNLOAD_BUTTON).await;
    assert_downloaded(&browser, downloads.path(), file_name, CONTENT).await;
    browser.wait_for("#download-started:not([hidden])", DEFAULT_WAIT).await;
    browser.reload().await;
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    assert_eq!(browser.text("h1").await, lang.text().recipient.downloaded_title.replace('|', ""));
    assert_fits_phone(&browser, &format!("{prefix}gone")).await;
    browser.screenshot(&format!("recipient-phone-{prefix}5-gone")).await;

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_recipient_pages_fit_a_phone() {
    let started = Instant::now();
    // English, as asked of the layout; a long name without spaces is the usual thing to overflow.
    phone_walk(Lang::En, "", "quarterly-report-2025-final-revised-v3-signed-by-everyone.pdf").await;
    // And Japanese, the recipient this app is written for, with a long name too.
    phone_walk(Lang::Ja, "ja-", "2025年度_株式会社ワタス様_御見積書_最終版_修正済み.pdf").await;
    eprintln!("phone walks: {:?}", started.elapsed());
}
