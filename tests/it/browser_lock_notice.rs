//! A locked share's page in a real Chromium, on a phone in Japanese and on a desktop in English
//! without JavaScript: it says how many browsers typed the wrong codes and what unlocking keeps.
//! The harness checks each page with axe-core.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    lock_notice::{lock_with, typed_a_wrong_code},
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession},
    },
};

async fn a_locked_share_page_says_who_typed_the_codes_and_what_unlocking_keeps(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::phone()),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let email = format!("locked-{round}@example.test");
        let sender = app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let share = app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
        let (recipient, csrf) = typed_a_wrong_code(&app, &share).await;
        lock_with(&app, &share, &recipient, &csrf).await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;

        browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;

        let t = &lang.text().dashboard;
        assert_eq!(browser.text("[data-locked-browsers]").await, t.locked_one_browser);
        assert_eq!(browser.text("[data-unlock-keeps]").await, t.unlock_keeps);
        browser.assert_no_horizontal_overflow("the locked share's page").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_locked_share_page_says_who_typed_the_codes_and_what_unlocking_keeps);
