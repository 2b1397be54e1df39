//! Without JavaScript, a file over the limit gives the new-share form back (not an error page)
//! with the recipient, message and validity kept, saying the limit and the file's size, at phone
//! and desktop width in Japanese and in English. The harness checks each page with axe-core.

use watasu::i18n::{Lang, format::human_size};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

const LIMIT: u64 = 1024 * 1024;
const MESSAGE: &str = "契約書です";

async fn a_file_over_the_limit_gives_the_form_back_without_javascript(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = LIMIT).await;
    // Over by its length (refused at the file) and just over (cut off while it streams).
    let over_by_length = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(over_by_length.path(), vec![7u8; 3 * LIMIT as usize / 2]).unwrap();
    let just_over = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(just_over.path(), vec![7u8; LIMIT as usize + 10 * 1024]).unwrap();
    let rounds = [
        (Lang::Ja, BrowserOptions::phone().without_javascript(), &over_by_length),
        (Lang::En, BrowserOptions::phone().language("en").without_javascript(), &just_over),
        (Lang::Ja, BrowserOptions::desktop().without_javascript(), &just_over),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript(), &over_by_length),
    ];
    for (round, (lang, options, file)) in rounds.into_iter().enumerate() {
        let email = format!("big-{round}@example.test");
        app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;
        browser.goto(&format!("{}/shares/new", app.base)).await;
        browser.fill("#recipient", "client@example.test").await;
        browser.fill("#message", MESSAGE).await;
        browser
            .find("input[type=file]")
            .await
            .send_keys(file.path().to_str().unwrap())
            .await
            .expect("choosing the file");
        browser.click("main form button[type=submit]").await;

        browser.wait_for("#file-error[role=alert]", DEFAULT_WAIT).await;
        assert_eq!(browser.current_path().await, "/shares/new");
        assert_eq!(browser.attr("#recipient", "value").await.as_deref(), Some("client@example.test"));
        assert_eq!(browser.text("#message").await, MESSAGE);
        let said = browser.text("#file-error").await;
        assert!(said.contains(&human_size(LIMIT, lang)), "round {round}: no limit in {said:?}");
        let words = lang.text().dashboard.form_checks.too_large;
        assert!(said.starts_with(words.split_once("{size}").unwrap().0), "round {round}: no size in {said:?}");
        assert!(browser.exists("[data-file-again]").await);
        browser.assert_no_horizontal_overflow("the form over the limit").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_file_over_the_limit_gives_the_form_back_without_javascript);
