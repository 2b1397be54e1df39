//! The pages that end the recipient's flow in a real Chromium, on a phone in Japanese and on a
//! desktop in English: "downloaded in this browser" in a calm card, and the gone, locked and
//! expired pages with a way to write to the sender; an unknown link names no one. Every page
//! passes axe and fits the width.

use std::time::Duration;

use watasu::{db::Sql, i18n::Lang};

use crate::support::{
    Backend, RECIPIENT, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    execute,
};

const SENDER_EMAIL: &str = "hanako.sato@example.test";
const SENDER_NAME: &str = "佐藤 花子";
const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const DOWNLOAD_BUTTON: &str = "#step form[action$='/download'] button[type=submit]";

/// Waits for the end card of `status` and checks the page fits the window's width.
async fn at_end(browser: &BrowserSession, status: u16, what: &str) {
    browser.wait_for(&format!("section.card[data-status='{status}']"), DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(what).await;
}

async fn ends_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let sender = app.create_sender(SENDER_EMAIL, SENDER_NAME).await;
    let share = app.fake_share().sender(sender).create().await;
    let (locked, expired) =
        (app.fake_share().sender(sender).create().await, app.fake_share().sender(sender).create().await);
    let lock = "UPDATE shares SET locked_at = expires_at WHERE id = $1";
    execute(app.db(), Sql::same(lock), locked.id).await;
    app.expire_share(expired.id).await;
    let downloads = tempfile::tempdir().unwrap();
    let browser = BrowserSession::start(options.downloads_to(downloads.path())).await;
    let words = lang.text().recipient.write_to.replace('|', "").replace("{sender}", SENDER_NAME);
    let link = |token: &str| format!("{}/s/{token}", app.base);

    browser.goto(&link(&share.token)).await;
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = app.smtp.wait_for(1, Duration::from_secs(10)).await[0].code().unwrap();
    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    browser.click(DOWNLOAD_BUTTON).await;
    browser.wait_for_download(downloads.path(), Duration::from_secs(20)).await;
    app.consumed_ago(share.id, 16 * 60).await;
    browser.goto(&link(&share.token)).await;
    at_end(&browser, 410, "the downloaded-here page").await;
    assert!(!browser.exists("section.card-error").await, "good news in an error card");
    assert_eq!(browser.text("a.write-to").await, words);
    assert_eq!(browser.attr("a.write-to", "href").await, Some(format!("mailto:{SENDER_EMAIL}")));
    browser.screenshot(&format!("recipient-ends-{label}-1-downloaded")).await;

    for (token, status, name) in [(&locked.token, 403, "locked"), (&expired.token, 404, "expired")] {
        browser.goto(&link(token)).await;
        at_end(&browser, status, &format!("the {name} page")).await;
        assert!(browser.exists("section.card-error").await);
        assert_eq!(browser.text("a.write-to").await, words);
        browser.screenshot(&format!("recipient-ends-{label}-2-{name}")).await;
    }

    browser.goto(&link(&"0".repeat(64))).await;
    at_end(&browser, 404, "the unknown-link page").await;
    assert!(!browser.exists("a.write-to").await, "an unknown link names the sender");
    assert!(!browser.source().await.contains(SENDER_NAME));

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

async fn the_end_pages_on_a_phone_in_japanese(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    ends_walk(&app, BrowserOptions::phone(), Lang::Ja, "phone").await;
    app.stop().await;
}

async fn the_end_pages_on_a_desktop_in_english_without_javascript(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    ends_walk(&app, BrowserOptions::desktop().without_javascript().language("en"), Lang::En, "desktop").await;
    app.stop().await;
}

crate::both_backends!(the_end_pages_on_a_phone_in_japanese, the_end_pages_on_a_desktop_in_english_without_javascript);
