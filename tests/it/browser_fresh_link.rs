//! "Send a fresh link" in a real Chromium, on a phone in Japanese with JavaScript and on a desktop
//! in English without: the link is shown once, and a reload shows the same link and mails nothing
//! more. The harness checks every page state with axe-core.

use std::time::Duration;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        count,
    },
};

async fn a_reload_after_a_fresh_link_shows_it_again_without_another_mail(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let rounds = [BrowserOptions::phone(), BrowserOptions::desktop().language("en").without_javascript()];
    for (round, options) in rounds.into_iter().enumerate() {
        let email = format!("fresh-{round}@example.test");
        let sender = app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let share = app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;
        let mails_before = app.smtp.messages().len();

        browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;
        browser.click("#fresh-link button[type=submit]").await;
        browser.wait_for("#share-link", DEFAULT_WAIT).await;
        let link = browser.attr("#share-link", "value").await.expect("the fresh link");
        assert_eq!(browser.current_path().await, format!("/shares/{}?done=renewed", share.id));
        browser.reload().await;
        browser.wait_for("#share-link", DEFAULT_WAIT).await;

        assert_eq!(browser.attr("#share-link", "value").await, Some(link.clone()), "round {round}");
        // The link's mail is queued before the answer: the outbox already holds every mail for the share.
        let queued = count(app.db(), "SELECT count(*) FROM mail_outbox WHERE share_id = $1", share.id).await;
        assert_eq!(queued, 1, "round {round}: the reload queued another mail");
        app.smtp.wait_for(mails_before + 1, Duration::from_secs(10)).await;
        browser.assert_no_horizontal_overflow("the share page with its fresh link").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_reload_after_a_fresh_link_shows_it_again_without_another_mail);
