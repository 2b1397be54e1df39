//! A recovery code typed in a real Chromium, with JavaScript on and off, in both languages: the
//! code step's switch opens a field of its own that keeps letters and dashes (the app's field
//! keeps digits only), a wrong recovery code is refused next to that field, and a right one signs in.

use crate::{
    both_backends,
    second_factor::sender_with_app,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

async fn value_of(browser: &BrowserSession, css: &str) -> String {
    let script = format!("return document.querySelector({css:?}).value;");
    browser.execute(&script).await.as_str().unwrap_or_default().to_owned()
}

async fn a_recovery_code_typed_on_the_code_step_signs_in_with_javascript_on_and_off(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let runs = [
        ("ja", BrowserOptions::desktop()),
        ("en", BrowserOptions::phone()),
        ("en", BrowserOptions::desktop().without_javascript()),
        ("ja", BrowserOptions::desktop().without_javascript()),
    ];
    for (i, (language, options)) in runs.into_iter().enumerate() {
        let email = format!("sender{i}@example.test");
        let codes = sender_with_app(&app, &email).await;
        let javascript = options.javascript;
        let browser = BrowserSession::start(options.language(language)).await;
        browser.goto(&format!("{}/login", app.base)).await;
        browser.fill("#email", &email).await;
        browser.fill("#password", PASSWORD).await;
        browser.click("main form button[type=submit]").await;
        wait_for_path(&browser, "/login/second-factor").await;
        if javascript {
            browser.fill("#code", "12 34ab56").await;
            assert_eq!(value_of(&browser, "#code").await, "123456", "the app's field keeps digits only");
        }

        browser.click("[data-recovery] summary").await;
        browser.fill("#recovery-code", "zzzz-zzzz-zzzz").await;
        browser.click("[data-recovery] button[type=submit]").await;
        browser.wait_for("[data-recovery][open] #code-error", DEFAULT_WAIT).await;
        assert_eq!(browser.attr("#recovery-code", "aria-invalid").await.as_deref(), Some("true"));

        browser.fill("#recovery-code", &codes[0]).await;
        if javascript {
            assert_eq!(value_of(&browser, "#recovery-code").await, codes[0], "the recovery code was changed as typed");
        }
        browser.click("[data-recovery] button[type=submit]").await;
        wait_for_path(&browser, "/shares").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_recovery_code_typed_on_the_code_step_signs_in_with_javascript_on_and_off);
