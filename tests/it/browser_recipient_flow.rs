//! The forgiving recipient flow in a real Chromium, with JavaScript on (htmx swaps) and off (full
//! page loads), on both backends: a reload of the code step shows it again and sends nothing; a
//! mistyped address, "use a different address", then the right one reaches the file; a second
//! press of the download button after the delivery grace gets the "already downloaded" page that
//! says when this browser downloaded; and a phone never scrolls sideways.

use std::{path::Path, time::Duration};

use watasu::i18n::Lang;

use crate::support::{
    RECIPIENT, TestApp, TestShare,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    count,
};

const TYPO: &str = "recipiant@example.test";
const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const OTHER_ADDRESS: &str = "#step form[action$='/address'] button[type=submit]";
const DOWNLOAD_BUTTON: &str = "#step form[action$='/download'] button[type=submit]";
const GONE_CARD: &str = "section.card-error[data-status='410']";

/// Code requests the share has had: a reload that sent a code would add one.
async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

/// Waits for the step `name`, and checks that the page fits the window's width there.
async fn at_step(browser: &BrowserSession, name: &str) {
    browser.wait_for(&format!("#step[data-step={name}]"), DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(&format!("the {name} step")).await;
}

/// Reloads the page and checks it is still at step `name`.
async fn reload_stays_at(browser: &BrowserSession, name: &str) {
    browser.reload().await;
    at_step(browser, name).await;
}

async fn wait_for_file(browser: &BrowserSession, dir: &Path) {
    let file = browser.wait_for_download(dir, Duration::from_secs(20)).await;
    assert_eq!(std::fs::read(&file).unwrap(), b"the file contents\n", "the downloaded bytes differ");
}

/// The walk: a typo, a reload, back to the email step, the right address, a reload, the code,
/// the download, and a second press after the grace. `label` names the screenshots.
async fn forgiving_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let share = app.create_share().await;
    let downloads = tempfile::tempdir().unwrap();
    let javascript = options.javascript;
    let browser = BrowserSession::start(options.downloads_to(downloads.path())).await;
    let rf = lang.recipient_flow();
    let plain = |text: &str| text.replace('|', "");
    let link = format!("{}/s/{}", app.base, share.token);

    browser.goto(&link).await;
    at_step(&browser, "email").await;
    assert_eq!(browser.text(".once-before").await, plain(rf.once_before));
    browser.fill("input[name=email]", TYPO).await;
    browser.click(EMAIL_SUBMIT).await;
    at_step(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, TYPO);
    reload_stays_at(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, TYPO);
    assert_eq!(challenges(app, &share).await, 1, "the reload asked for a code");
    browser.screenshot(&format!("recipient-flow-{label}-1-typo")).await;

    browser.click(OTHER_ADDRESS).await;
    at_step(&browser, "email").await;
    assert_eq!(browser.attr("input[name=email]", "value").await.as_deref(), Some(TYPO));
    reload_stays_at(&browser, "email").await;
    assert_eq!(challenges(app, &share).await, 1, "going back asked for a code");
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    at_step(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, RECIPIENT);
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    reload_stays_at(&browser, "code").await;
    assert_eq!(challenges(app, &share).await, 2, "the reload asked for a code");
    browser.screenshot(&format!("recipient-flow-{label}-2-right")).await;

    browser.fill("#code", &mail.code().expect("a code")).await;
    browser.click(CODE_SUBMIT).await;
    at_step(&browser, "download").await;
    assert_eq!(browser.text("#download-after").await, plain(rf.after_press), "the note is not there without a click");
    browser.click(DOWNLOAD_BUTTON).await;
    wait_for_file(&browser, downloads.path()).await;
    assert_eq!(app.smtp.messages().len(), 1, "a reload sent a code mail");

    // After the delivery grace, a second press (JavaScript disables the button: a reload then).
    app.consumed_ago(share.id, 16 * 60).await;
    if javascript {
        browser.reload().await;
    } else {
        browser.click(DOWNLOAD_BUTTON).await;
    }
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the gone page").await;
    let (before, after) = rf.downloaded_here.split_once("{time}").unwrap();
    let said = browser.text(".end-body").await;
    assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
    browser.screenshot(&format!("recipient-flow-{label}-3-gone")).await;

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

crate::both_backends! {
    async fn the_forgiving_walk_with_javascript_on_a_desktop_in_english(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        forgiving_walk(&app, BrowserOptions::desktop().language("en"), Lang::En, "js").await;
        app.stop().await;
    }

    async fn the_forgiving_walk_with_javascript_off_on_a_phone_in_japanese(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        forgiving_walk(&app, BrowserOptions::phone().without_javascript(), Lang::Ja, "nojs-phone").await;
        app.stop().await;
    }
}
