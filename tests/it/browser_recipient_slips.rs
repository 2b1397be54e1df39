//! One slip is never punished, in a real Chromium with JavaScript on (a phone, Japanese) and off
//! (a desktop in English, a phone in both languages): "send a new code" says the same code was sent again, the email step says
//! before the last request that it is the last, and used-up requests give way to when to ask
//! again, the spam-folder hint and the sender's name. Every state passes axe and fits the width.

use watasu::i18n::Lang;

use crate::support::{
    Backend, TestApp, TestShare,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    count, event_kinds,
};

const TYPO: &str = "recipiant@example.test";
const SENDER_NAME: &str = "佐藤 花子";
const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const RESEND: &str = "#step form[action$='/code/new'] button[type=submit]";
const OTHER_ADDRESS: &str = "#step form[action$='/address'] button[type=submit]";
/// The WebDriver key code of Escape: closes the browser's suggestion of an address typed before.
const ESCAPE: char = '\u{E00C}';

async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

/// Waits for the step `name` and checks the page fits the window's width there.
async fn at_step(browser: &BrowserSession, name: &str) {
    browser.wait_for(&format!("#step[data-step={name}]"), DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(&format!("the {name} step")).await;
}

/// Types `address` on the email step and sends it; waits for the code step.
async fn send_address(browser: &BrowserSession, address: &str) {
    browser.fill("input[name=email]", &format!("{address}{ESCAPE}")).await;
    browser.click(EMAIL_SUBMIT).await;
    at_step(browser, "code").await;
}

async fn other_address(browser: &BrowserSession) {
    browser.click(OTHER_ADDRESS).await;
    at_step(browser, "email").await;
}

async fn slips_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let sender = app.create_sender(&format!("sender-{label}@example.test"), SENDER_NAME).await;
    let share = app.fake_share().sender(sender).create().await;
    let browser = BrowserSession::start(options).await;
    let rf = &lang.text().recipient;
    let plain = |text: &str| text.replace('|', "");

    browser.goto(&format!("{}/s/{}", app.base, share.token)).await;
    at_step(&browser, "email").await;
    send_address(&browser, TYPO).await;
    browser.click(RESEND).await;
    browser.wait_for("#code-status.ok-text", DEFAULT_WAIT).await;
    let said = browser.text("#code-status").await;
    let (before, after) = rf.code_repeated.split_once("{time}").unwrap();
    assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
    assert_eq!(challenges(app, &share).await, 1, "sending the code again spent a request");
    browser.screenshot(&format!("recipient-slips-{label}-1-again")).await;

    other_address(&browser).await;
    send_address(&browser, TYPO).await;
    other_address(&browser).await;
    let said = browser.text("#last-request").await;
    let (before, after) = rf.last_request.split_once("{time}").unwrap();
    assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
    browser.screenshot(&format!("recipient-slips-{label}-2-last")).await;

    send_address(&browser, TYPO).await;
    other_address_to_block(&browser).await;
    assert!(!browser.exists("#step form").await, "a form that cannot work is still shown");
    assert!(browser.text("#blocked-until").await.contains("10"), "no wait said");
    assert_eq!(browser.text(".blocked-sender strong").await, SENDER_NAME);
    assert_eq!(browser.text("#step .hint").await, rf.spam_hint);
    browser.reload().await;
    at_step(&browser, "blocked").await;
    browser.screenshot(&format!("recipient-slips-{label}-3-blocked")).await;

    let blocks = event_kinds(app, share.id).await.iter().filter(|k| *k == "code_requests_blocked").count();
    assert_eq!(blocks, 1, "the sender heard of one block more than once");
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

/// "Use a different address" with the requests used up: the blocked step, not the email step.
async fn other_address_to_block(browser: &BrowserSession) {
    browser.click(OTHER_ADDRESS).await;
    at_step(browser, "blocked").await;
}

async fn a_slip_with_javascript_on_a_phone_in_japanese(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    slips_walk(&app, BrowserOptions::phone(), Lang::Ja, "js-phone").await;
    app.stop().await;
}

async fn a_slip_with_javascript_off_on_a_desktop_in_english(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    slips_walk(&app, BrowserOptions::desktop().without_javascript().language("en"), Lang::En, "nojs").await;
    app.stop().await;
}

async fn a_slip_with_javascript_off_on_a_phone_in_both_languages(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    slips_walk(&app, BrowserOptions::phone().without_javascript(), Lang::Ja, "nojs-phone-ja").await;
    slips_walk(&app, BrowserOptions::phone().without_javascript().language("en"), Lang::En, "nojs-phone-en").await;
    app.stop().await;
}

crate::both_backends!(
    a_slip_with_javascript_on_a_phone_in_japanese,
    a_slip_with_javascript_off_on_a_desktop_in_english,
    a_slip_with_javascript_off_on_a_phone_in_both_languages
);
