//! A recipient's form without its cookie in a real Chromium, on a phone in Japanese (JavaScript
//! on) and on a desktop in English (off): with the cookies gone the page says it needs them, with
//! a cookie that no longer matches it asks to open the link page again; its button leads back to
//! a working email step. Every page passes axe and fits the width.

use serde_json::json;
use watasu::i18n::Lang;

use crate::support::{
    Backend, RECIPIENT, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const REFUSED_CARD: &str = "section.card-error[data-status='403']";

/// Fills the email step and sends it; waits for the refusal page and checks its width.
async fn send_and_get_refused(browser: &BrowserSession) {
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for(REFUSED_CARD, DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the refused form").await;
}

async fn cookies_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let share = app.create_share().await;
    let browser = BrowserSession::start(options).await;
    let errors = &lang.text().errors;
    let link = format!("{}/s/{}", app.base, share.token);

    browser.goto(&link).await;
    browser.wait_for("#step[data-step=email]", DEFAULT_WAIT).await;
    browser.cdp("Network.clearBrowserCookies", json!({})).await;
    send_and_get_refused(&browser).await;
    assert_eq!(browser.text("h1").await, errors.link_form_needs_cookies.title);
    assert_eq!(browser.text(".card-error a.button").await, errors.reopen_link);
    browser.screenshot(&format!("recipient-cookies-{label}-1-none")).await;

    browser.click(".card-error a.button").await;
    browser.wait_for("#step[data-step=email]", DEFAULT_WAIT).await;
    let stale = json!({ "name": "watasu_form", "value": "a".repeat(43), "url": app.base });
    browser.cdp("Network.setCookie", stale).await;
    send_and_get_refused(&browser).await;
    assert_eq!(browser.text("h1").await, errors.link_form_stale.title);
    browser.screenshot(&format!("recipient-cookies-{label}-2-stale")).await;

    browser.click(".card-error a.button").await;
    browser.wait_for("#step[data-step=email]", DEFAULT_WAIT).await;
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click(EMAIL_SUBMIT).await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

async fn a_form_without_its_cookie_on_a_phone_in_japanese(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    cookies_walk(&app, BrowserOptions::phone(), Lang::Ja, "phone").await;
    app.stop().await;
}

async fn a_form_without_its_cookie_on_a_desktop_in_english_without_javascript(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    cookies_walk(&app, BrowserOptions::desktop().without_javascript().language("en"), Lang::En, "desktop").await;
    app.stop().await;
}

crate::both_backends!(
    a_form_without_its_cookie_on_a_phone_in_japanese,
    a_form_without_its_cookie_on_a_desktop_in_english_without_javascript
);
