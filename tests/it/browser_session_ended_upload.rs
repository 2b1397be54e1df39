//! Without JavaScript, a sender whose session ended while the new-share form was open sends it and
//! lands on the sign-in page saying to choose the file again (not on "connection reset"), in
//! Japanese and in English, on a desktop and on a phone. The harness checks each page with axe-core.

use watasu::{db::Sql, i18n::Lang};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        execute,
    },
};

async fn a_form_sent_after_the_session_ended_leads_to_sign_in_without_javascript(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), vec![7u8; 8 * 1024 * 1024]).unwrap();
    let rounds = [
        (Lang::Ja, BrowserOptions::desktop().without_javascript()),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
        (Lang::Ja, BrowserOptions::phone().without_javascript()),
        (Lang::En, BrowserOptions::phone().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let email = format!("ended-{round}@example.test");
        app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;
        browser.goto(&format!("{}/shares/new", app.base)).await;
        browser.fill("#recipient", "client@example.test").await;
        let input = browser.find("input[type=file]").await;
        input.send_keys(file.path().to_str().unwrap()).await.expect("choosing the file");

        // The session ends while the form is open (signed out elsewhere, or expired).
        execute(app.db(), Sql::same("DELETE FROM sessions WHERE id > $1"), 0).await;
        browser.click("main form button[type=submit]").await;

        browser.wait_for("[data-upload-lost]", DEFAULT_WAIT).await;
        assert_eq!(browser.current_path().await, "/login?upload_lost=1");
        assert_eq!(browser.text("[data-upload-lost]").await, lang.text().dashboard.upload_session_ended);
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_form_sent_after_the_session_ended_leads_to_sign_in_without_javascript);
