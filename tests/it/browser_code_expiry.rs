//! A code typed after its time ran out, in a real Chromium with JavaScript on (a phone, Japanese)
//! and off (a desktop, English): the code step says it expired and "send a new code" brings one.
//! Every state passes axe and fits the width.

use watasu::{db::Sql, i18n::Lang};

use crate::support::{
    Backend, RECIPIENT, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    execute,
};

const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const RESEND: &str = "#step form[action$='/code/new'] button[type=submit]";
/// The WebDriver key code of Escape: closes the browser's suggestion of an address typed before.
const ESCAPE: char = '\u{E00C}';

async fn expired_code_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let share = app.create_share().await;
    let browser = BrowserSession::start(options).await;
    let rf = &lang.text().recipient;

    browser.goto(&format!("{}/s/{}", app.base, share.token)).await;
    browser.wait_for("#step[data-step=email]", DEFAULT_WAIT).await;
    let before = app.smtp.messages().len();
    browser.fill("input[name=email]", &format!("{RECIPIENT}{ESCAPE}")).await;
    browser.click("#step form[action$='/email'] button[type=submit]").await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    execute(app.db(), Sql::same("UPDATE otp_challenges SET expires_at = created_at WHERE share_id = $1"), share.id)
        .await;

    browser.fill("#code", &code).await;
    browser.click(CODE_SUBMIT).await;
    browser.wait_for("#code-status.error-text:not(:empty)", DEFAULT_WAIT).await;
    assert_eq!(browser.text("#code-status").await, rf.code_expired.replace('|', ""));
    browser.assert_no_horizontal_overflow("the expired code step").await;
    browser.screenshot(&format!("recipient-code-expired-{label}")).await;

    browser.click(RESEND).await;
    browser.wait_for("#code-status.ok-text", DEFAULT_WAIT).await;
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

async fn an_expired_code_with_javascript_on_a_phone_in_japanese(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    expired_code_walk(&app, BrowserOptions::phone(), Lang::Ja, "js-phone").await;
    app.stop().await;
}

// Without JavaScript at desktop width: axe-core cannot run under phone emulation with scripts off
// (see `support::browser::pages`).
async fn an_expired_code_with_javascript_off_on_a_desktop_in_english(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    expired_code_walk(&app, BrowserOptions::desktop().without_javascript().language("en"), Lang::En, "nojs").await;
    app.stop().await;
}

crate::both_backends!(
    an_expired_code_with_javascript_on_a_phone_in_japanese,
    an_expired_code_with_javascript_off_on_a_desktop_in_english
);
