//! The sign-in page's help in a real Chromium, in both languages at phone and desktop width: the
//! forgotten-password note shows, the footer has no link to the page itself, and wrong passwords
//! in a row end on a 429 page that says how many minutes to wait. axe-core checks each page.

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn the_sign_in_page_and_its_throttle_say_what_to_do_in_a_browser(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("owner@example.test", "Owner", PASSWORD).await;
    let runs = [("ja", BrowserOptions::phone()), ("en", BrowserOptions::desktop())];
    for (language, options) in runs {
        let browser = BrowserSession::start(options.language(language)).await;
        browser.goto(&format!("{}/login", app.base)).await;
        browser.wait_for("[data-forgotten]", DEFAULT_WAIT).await;
        assert!(!browser.exists("footer a[href$='/login']").await, "the footer links to the page it is on");
        browser.assert_no_horizontal_overflow("the sign-in page").await;

        for _ in 0..30 {
            if browser.exists("[data-status='429']").await {
                break;
            }
            browser.fill("#email", "owner@example.test").await;
            browser.fill("#password", "a wrong guess").await;
            browser.mark_document().await;
            browser.click("main form button[type=submit]").await;
            browser.wait_until("the next page", DEFAULT_WAIT, async |b| !b.document_is_marked().await).await;
            browser.wait_for("[data-status='429'], #login-error", DEFAULT_WAIT).await;
        }
        browser.wait_for("[data-status='429'] [data-wait]", DEFAULT_WAIT).await;
        browser.assert_no_horizontal_overflow("the 429 page").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_sign_in_page_and_its_throttle_say_what_to_do_in_a_browser);
