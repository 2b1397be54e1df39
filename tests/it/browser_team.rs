//! The team page in a real Chromium, in both languages at phone and desktop width: inviting
//! names the invited address, the waiting invitation is listed with its expiry and can be sent
//! again and cancelled, and a disabled member is enabled again through its confirmation page.
//! axe-core checks every page state.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

async fn the_team_page_manages_invitations_and_enables_members_in_a_browser(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let runs = [(Lang::Ja, BrowserOptions::phone()), (Lang::En, BrowserOptions::desktop())];
    for (i, (lang, options)) in runs.into_iter().enumerate() {
        let a = &lang.text().admin;
        let invited = format!("invited{i}@example.test");
        let member = app.create_sender_with_password(&format!("member{i}@example.test"), "Member", PASSWORD).await;
        let browser = BrowserSession::start(options.language(lang.code())).await;
        browser.goto(&format!("{}/login", app.base)).await;
        browser.fill("#email", "admin@example.test").await;
        browser.fill("#password", PASSWORD).await;
        browser.click("main form button[type=submit]").await;
        wait_for_path(&browser, "/shares").await;

        browser.goto(&format!("{}/team", app.base)).await;
        browser.fill("form[action$='/team/invite'] #email", &invited).await;
        browser.click("form[action$='/team/invite'] button").await;
        browser.wait_for("[data-notice]", DEFAULT_WAIT).await;
        assert_eq!(browser.text("[data-notice]").await, a.team_invited_to.replace("{email}", &invited));
        browser.wait_for("[data-invitation] [data-expires]", DEFAULT_WAIT).await;
        browser.assert_no_horizontal_overflow("the team page with an invitation").await;
        browser.mark_document().await;
        browser.click("[data-invitation] [data-resend]").await;
        browser.wait_until("the next page", DEFAULT_WAIT, async |b| !b.document_is_marked().await).await;
        browser.wait_for("[data-notice]", DEFAULT_WAIT).await;
        assert_eq!(browser.text("[data-notice]").await, a.invitation_resent.replace("{email}", &invited));
        browser.click("[data-invitation] [data-cancel-invitation]").await;
        browser.wait_for("[data-no-invitations]", DEFAULT_WAIT).await;

        browser.click(&format!("[data-member='{member}'] a[data-disable]")).await;
        wait_for_path(&browser, &format!("/team/{member}/disable")).await;
        browser.click("main form button[type=submit]").await;
        browser.wait_for(&format!("[data-member='{member}'] a[data-enable]"), DEFAULT_WAIT).await;
        browser.click(&format!("[data-member='{member}'] a[data-enable]")).await;
        wait_for_path(&browser, &format!("/team/{member}/enable")).await;
        assert_eq!(browser.text("main h1").await, a.enable_confirm_title);
        browser.assert_no_horizontal_overflow("the enable confirmation").await;
        browser.click("main form button[type=submit]").await;
        browser.wait_for("[data-notice]", DEFAULT_WAIT).await;
        assert_eq!(browser.text("[data-notice]").await, a.enabled_notice);
        assert_eq!(browser.attr(&format!("[data-member='{member}']"), "data-disabled").await.as_deref(), Some("false"));
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_team_page_manages_invitations_and_enables_members_in_a_browser);
