//! The language choices in a real Chromium, in both languages at phone and desktop width: the
//! account page's language of the mails about the account is saved and confirmed, and the
//! new-share form then offers the page's language for the recipient's mail. axe-core checks each
//! page state.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn the_mail_language_is_chosen_on_the_account_page_in_a_browser(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let runs = [(Lang::Ja, Lang::En, BrowserOptions::phone()), (Lang::En, Lang::Ja, BrowserOptions::desktop())];
    for (i, (page_lang, mail_lang, options)) in runs.into_iter().enumerate() {
        let email = format!("sender{i}@example.test");
        app.create_sender_with_password(&email, "Sender", PASSWORD).await;
        let browser = BrowserSession::start(options.language(page_lang.code())).await;
        browser.sign_in(&app.base, &email).await;

        browser.goto(&format!("{}/shares/new", app.base)).await;
        assert_eq!(browser.attr("#mail_lang option[selected]", "value").await.as_deref(), Some(page_lang.code()));
        browser.goto(&format!("{}/account", app.base)).await;
        browser
            .execute_with(
                "document.getElementById('mail_lang').value = arguments[0];",
                vec![serde_json::json!(mail_lang.code())],
            )
            .await;
        browser.click("form[action$='/account/mail-language'] button").await;
        browser.wait_for("[data-mail-lang-saved]", DEFAULT_WAIT).await;
        let expected = page_lang.text().auth.mail_lang_saved.replace("{lang}", mail_lang.text().chrome.lang_name);
        assert_eq!(browser.text("[data-mail-lang-saved]").await, expected);
        browser.assert_no_horizontal_overflow("the account page").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_mail_language_is_chosen_on_the_account_page_in_a_browser);
