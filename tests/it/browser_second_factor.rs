//! Signing in with an authenticator app in a real Chromium, with JavaScript on and off, in both
//! languages at phone and desktop width: the team's policy leads a new account to the set-up page,
//! the QR code and key are shown, the first code confirms it, the recovery codes are shown once,
//! and the next sign-in asks for a code. The harness checks every page met with axe-core.

use totp_rs::{Builder, Secret};
use watasu::accounts::policy::{SignInPolicies, SignInPolicy};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The code an app shows `offset` steps from now, once the step has room for typing it.
async fn code(key: &str, offset: u64) -> String {
    while now() % 30 > 20 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let bytes: [u8; 20] = Secret::try_from_base32(key.replace(' ', "")).unwrap().as_bytes().try_into().unwrap();
    let totp = Builder::new().with_secret(Secret::new_stack(bytes)).build().unwrap();
    totp.generate((now() / 30 + offset) * 30).to_string()
}

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

async fn password_step(browser: &BrowserSession, base: &str, email: &str) {
    browser.goto(&format!("{base}/login")).await;
    browser.fill("#email", email).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("main form button[type=submit]").await;
}

async fn an_account_sets_up_an_app_when_the_team_requires_it_and_signs_in_with_its_codes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let policy = SignInPolicy { require_second_factor: true, passwords_allowed: true };
    SignInPolicies::new(app.db().clone()).set(policy, None).await.unwrap();
    let runs = [
        ("ja", BrowserOptions::desktop()),
        ("en", BrowserOptions::phone()),
        // Without JavaScript at desktop width only: under phone emulation Chromium's renderer
        // stops answering a click after the harness switches scripts back off (pages.rs).
        ("ja", BrowserOptions::desktop().without_javascript()),
        ("en", BrowserOptions::desktop().without_javascript()),
    ];
    for (i, (language, options)) in runs.into_iter().enumerate() {
        let email = format!("admin{i}@example.test");
        let id = app.create_admin(&email).await;
        let browser = BrowserSession::start(options.language(language)).await;

        password_step(&browser, &app.base, &email).await;
        wait_for_path(&browser, "/login/enrol").await;
        browser.wait_for(".qr svg", DEFAULT_WAIT).await;
        let key = browser.text("[data-totp-secret]").await;
        browser.fill("#code", "000000").await;
        browser.click("main form button[type=submit]").await;
        browser.wait_for("#code-error", DEFAULT_WAIT).await;
        let key_again = browser.text("[data-totp-secret]").await;
        assert_eq!(key, key_again, "a refused code changed the key");
        browser.fill("#code", &code(&key, 0).await).await;
        browser.click("main form button[type=submit]").await;
        browser.wait_for("[data-recovery-codes]", DEFAULT_WAIT).await;
        assert_eq!(browser.find_all("[data-recovery-codes] li").await.len(), 10);
        browser.click("[data-continue]").await;
        wait_for_path(&browser, "/shares").await;

        for page in ["/account".to_owned(), "/team".to_owned(), format!("/team/{id}/reset-factors")] {
            browser.goto(&format!("{}{page}", app.base)).await;
            browser.wait_for("main h1", DEFAULT_WAIT).await;
        }
        browser.goto(&format!("{}/account", app.base)).await;
        browser.wait_for("[data-totp-on]", DEFAULT_WAIT).await;
        browser.click("main form[action$='/logout'] button").await;
        wait_for_path(&browser, "/").await;

        password_step(&browser, &app.base, &email).await;
        wait_for_path(&browser, "/login/second-factor").await;
        browser.fill("#code", &code(&key, 1).await).await;
        browser.click("main form button[type=submit]").await;
        wait_for_path(&browser, "/shares").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(an_account_sets_up_an_app_when_the_team_requires_it_and_signs_in_with_its_codes);
