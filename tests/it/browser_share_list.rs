//! The share list with each share's time in a real Chromium, on a phone in Japanese and on a
//! desktop in English without JavaScript: the time left shows, and nothing scrolls sideways. The
//! harness checks each page with axe-core.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession},
    },
};

async fn the_share_list_shows_the_time_left_at_both_widths(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::phone()),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let email = format!("list-{round}@example.test");
        let sender = app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;

        let left = browser.text(".share-row[data-status=waiting] [data-outcome-time]").await;

        // A test share lasts an hour.
        let (before, after) = lang.text().dashboard.minutes_left.split_once("{n}").unwrap();
        let n = left.strip_prefix(before).and_then(|rest| rest.strip_suffix(after)).expect(&left);
        assert!((55..=60).contains(&n.parse::<u32>().unwrap()), "{left}");
        browser.assert_no_horizontal_overflow("the share list").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_share_list_shows_the_time_left_at_both_widths);
