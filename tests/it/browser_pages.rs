//! Every page, in both languages, at phone and desktop width: a tour that opens each one, so the
//! harness's axe-core check and screenshot (support/browser/pages.rs) cover the whole site, not
//! only the pages a walk happens to pass. The walks themselves (recipient steps, uploads, the
//! share page's refresh) are tested in the other browser tests; this one only visits (and makes an
//! API token and a webhook endpoint, whose secret's page a form's answer alone reaches). It runs on
//! SQLite alone: which database answers does not change a page's markup.

use crate::support::{
    Backend, PASSWORD, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

const ADMIN: &str = "admin@example.test";

/// The pages a signed-out visitor can open, given a live share's token and an invitation path.
fn public_pages(token: &str, invitation: &str) -> Vec<String> {
    let unknown_link = format!("/s/{}", "0".repeat(64));
    vec![
        "/".into(),
        "/login".into(),
        format!("/s/{token}"),
        unknown_link,
        invitation.into(),
        "/no-such-page".into(),
        "/api/v1/docs".into(),
    ]
}

/// The pages a signed-in admin can open, given a share and another member.
fn signed_in_pages(share_id: i64, member_id: i64) -> Vec<String> {
    let fixed = ["/shares", "/shares/new", "/account", "/team", "/admin/maintenance", "/admin/deletions", "/webhooks"];
    let mut pages: Vec<String> = fixed.iter().map(|p| (*p).to_owned()).collect();
    pages.extend([
        format!("/shares/{share_id}"),
        format!("/shares/{share_id}/revoke"),
        format!("/team/{member_id}/disable"),
        format!("/team/{member_id}/delete"),
        "/shares/999999".into(),
    ]);
    pages
}

/// Opens `path` and checks what the harness does not: the page fits its width, and no phrase mark
/// of the Japanese catalogue ("|", turned into line-break opportunities) shows as text.
async fn open(browser: &BrowserSession, base: &str, path: &str) {
    browser.goto(&format!("{base}{path}")).await;
    browser.wait_for("main h1", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(path).await;
    let text = browser.text("body").await;
    assert!(!text.contains('|'), "{path}: a phrase mark shows as text: {text}");
}

/// Makes an API token through the account page's form, which leads to the page that shows it
/// once (a POST's answer, so no path of the tour reaches it); the account and team pages then
/// list it.
async fn make_api_token(browser: &BrowserSession, base: &str) {
    browser.goto(&format!("{base}/account")).await;
    browser.fill("#token_name", "CI deploy").await;
    browser.click("input[name=scope][value='shares:read']").await;
    browser.fill("#token_password", PASSWORD).await;
    browser.click("[data-create-token-button]").await;
    browser.wait_for("[data-new-token]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the new token's page").await;
}

/// Registers a webhook endpoint through the form, which leads to the page that shows its secret
/// once; then opens the endpoint's page (with its buttons and log) from there.
async fn make_webhook(browser: &BrowserSession, base: &str) {
    browser.goto(&format!("{base}/webhooks")).await;
    browser.fill("#webhook_url", "https://hooks.example.test/in").await;
    browser.click("[data-create-webhook-button]").await;
    browser.wait_for("[data-new-secret]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the new secret's page").await;
    browser.click("[data-continue]").await;
    browser.wait_for("[data-webhook-test]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("a webhook endpoint's page").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_page_passes_axe_core_in_both_languages_at_both_widths() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    // A second installation without SMTP: only it has the development outbox page.
    let outbox_app = TestApp::spawn_with(Backend::Sqlite, |s| s.smtp_url = None).await;
    let admin_id = app.create_admin(ADMIN).await;
    let member_id = app.create_sender_with_password("member@example.test", "Member Mori", PASSWORD).await;
    let share =
        app.fake_share().sender(admin_id).recipient("client@example.test").file("plan.pdf", b"plan").create().await;
    let invitation = app.invite(&app.sign_in(ADMIN, PASSWORD).await, "new@example.test").await;
    outbox_app.create_admin(ADMIN).await;

    for language in ["ja", "en"] {
        for options in [BrowserOptions::desktop(), BrowserOptions::phone()] {
            let browser = BrowserSession::start(options.language(language)).await;
            for path in public_pages(&share.token, &invitation) {
                open(&browser, &app.base, &path).await;
            }
            browser.sign_in(&app.base, ADMIN).await;
            make_api_token(&browser, &app.base).await;
            make_webhook(&browser, &app.base).await;
            for path in signed_in_pages(share.id, member_id) {
                open(&browser, &app.base, &path).await;
            }
            browser.sign_in(&outbox_app.base, ADMIN).await;
            open(&browser, &outbox_app.base, "/dev/outbox").await;
            browser.close().await;
        }
    }
    outbox_app.stop().await;
    app.stop().await;
}
