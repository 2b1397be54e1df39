//! A secret note in a real Chromium, in Japanese and English, on a phone and a desktop, with
//! JavaScript and without: the page before the code says a note is waiting, the step after it
//! offers to show it, and the note's page shows it as typed (the harness checks every page state
//! with axe-core, and nothing reaches past the right edge); back at the link during the grace, it
//! says the note was shown and offers it again.

use watasu::i18n::Lang;

use crate::support::{
    Backend, RECIPIENT, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

const NOTE: &str = "Wi-Fi: watasu-guest\nパスワード: 7f3K q9!x-2PbR8mZ";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_note_is_shown_once_in_both_languages_at_both_widths_with_and_without_javascript() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::desktop()),
        (Lang::Ja, BrowserOptions::phone().without_javascript()),
        (Lang::En, BrowserOptions::phone().language("en")),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let sender = app.create_sender(&format!("sender-{round}@example.test"), "佐藤 花子").await;
        let share = app.fake_share().sender(sender).note(NOTE).create().await;
        let link = format!("{}/s/{}", app.base, share.token);
        let browser = BrowserSession::start(options).await;
        let words = &lang.text().recipient.note;

        browser.goto(&link).await;
        assert_eq!(browser.text("h1").await, words.landing_title, "round {round}");
        browser.assert_no_horizontal_overflow("the page before the code of a note").await;
        app.walk_to_download_step(&browser, &link, RECIPIENT).await;
        assert_eq!(browser.text("h1").await, words.show_title, "round {round}");
        assert!(!browser.source().await.contains("7f3K"), "round {round}: the note before the claim");

        browser.click("#step form[action$='/note'] button[type=submit]").await;
        browser.wait_for("section[data-step=note]", DEFAULT_WAIT).await;
        assert_eq!(browser.text(".secret-note").await, NOTE, "round {round}");
        browser.assert_no_horizontal_overflow("the note's page").await;
        if round == 2 {
            browser.screenshot("recipient-note-phone").await;
        }
        // Back at the link during the grace: shown here already, and it can be shown again.
        browser.goto(&link).await;
        assert_eq!(browser.text("h1").await, words.read_title.replace('|', ""), "round {round}");
        browser.click("a[href$='/note']").await;
        browser.wait_for("section[data-step=note]", DEFAULT_WAIT).await;
        assert_eq!(browser.text(".secret-note").await, NOTE, "round {round}");
        browser.close().await;
    }
    app.stop().await;
}
