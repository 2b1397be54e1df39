//! Passkeys in a real Chromium with its virtual authenticator, in both languages at phone and
//! desktop width: a sender adds a passkey on the account page (the recovery codes are shown once),
//! signs out, and signs in again with the passkey alone; the same passkey used on another origin
//! of the same site (the app behind a second port) is refused with a message on the page. Without
//! JavaScript the page says passkeys need it. A team that requires a second factor lets an account
//! set up a passkey instead of an app, then asks for it after the password. The harness checks
//! every page met with axe-core.

use tokio::net::{TcpListener, TcpStream};
use watasu::{
    accounts::policy::{SignInPolicies, SignInPolicy},
    i18n::Lang,
};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

async fn password_step(browser: &BrowserSession, origin: &str, email: &str) {
    browser.goto(&format!("{origin}/login")).await;
    browser.fill("#email", email).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("main form[action$='/login'] button[type=submit]").await;
}

/// Another origin of the same site: `http://localhost:PORT` forwarding every connection to the app.
async fn second_origin(app: &TestApp) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = app.addr;
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    format!("http://localhost:{port}")
}

async fn a_sender_adds_a_passkey_and_signs_in_with_it_alone_but_not_from_another_origin(backend: Backend) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    let elsewhere = second_origin(&app).await;
    let languages = [("ja", Lang::Ja, BrowserOptions::phone()), ("en", Lang::En, BrowserOptions::desktop())];
    for (i, (language, lang, options)) in languages.into_iter().enumerate() {
        let email = format!("sender{i}@example.test");
        app.create_sender_with_password(&email, "Sender", PASSWORD).await;
        let browser = BrowserSession::start(options.language(language)).await;
        browser.add_virtual_authenticator().await;

        password_step(&browser, &origin, &email).await;
        wait_for_path(&browser, "/shares").await;
        browser.goto(&format!("{origin}/account")).await;
        browser.wait_for("[data-no-passkeys]", DEFAULT_WAIT).await;
        browser.fill("#passkey_name", "Phone").await;
        browser.fill("#passkey_password", "not my password").await;
        browser.click("form[data-passkey] [data-passkey-button]").await;
        browser
            .wait_until("the wrong password said", DEFAULT_WAIT, async |b| {
                !b.text("form[data-passkey] [data-passkey-error]").await.is_empty()
            })
            .await;
        browser.fill("#passkey_password", PASSWORD).await;
        browser.click("form[data-passkey] [data-passkey-button]").await;
        browser.wait_for("[data-recovery-codes]", DEFAULT_WAIT).await;
        browser.click("[data-continue]").await;
        wait_for_path(&browser, "/account").await;
        assert_eq!(browser.text("[data-passkey-name]").await, "Phone");

        browser.click("main form[action$='/logout'] button").await;
        wait_for_path(&browser, "/").await;
        browser.goto(&format!("{origin}/login")).await;
        browser.click("form[data-passkey] [data-passkey-button]").await;
        wait_for_path(&browser, "/shares").await;

        browser.goto(&format!("{origin}/account")).await;
        browser.click("main form[action$='/logout'] button").await;
        wait_for_path(&browser, "/").await;
        browser.goto(&format!("{elsewhere}/login")).await;
        browser.click("form[data-passkey] [data-passkey-button]").await;
        browser.wait_for("form[data-passkey] [data-passkey-error]:not([hidden])", DEFAULT_WAIT).await;
        // The server's refusal, not the browser's: the browser signs for this host on any port.
        assert_eq!(
            browser.text("form[data-passkey] [data-passkey-error]").await,
            lang.text().auth.passkeys.not_accepted
        );
        browser.goto(&format!("{elsewhere}/shares")).await;
        wait_for_path(&browser, "/login").await;
        browser.close().await;
    }

    let browser = BrowserSession::start(BrowserOptions::desktop().without_javascript().language("ja")).await;
    browser.goto(&format!("{origin}/login")).await;
    browser.click("form[data-passkey] [data-passkey-button]").await;
    browser.wait_for("form[data-passkey] [data-passkey-error]:not([hidden])", DEFAULT_WAIT).await;
    assert!(browser.text("[data-passkey-error]").await.contains("JavaScript"));
    browser.close().await;
    app.stop().await;
}

async fn a_team_that_requires_a_second_factor_lets_an_account_set_up_a_passkey_and_use_it_after_its_password(
    backend: Backend,
) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    let policy = SignInPolicy { require_second_factor: true, passwords_allowed: true };
    SignInPolicies::new(app.db().clone()).set(policy, None).await.unwrap();
    app.create_sender_with_password("sender@example.test", "Sender", PASSWORD).await;
    let browser = BrowserSession::start(BrowserOptions::phone().language("en")).await;
    browser.add_virtual_authenticator().await;

    password_step(&browser, &origin, "sender@example.test").await;
    wait_for_path(&browser, "/login/enrol").await;
    browser.fill("#passkey_name", "Phone").await;
    browser.click("form[data-passkey] [data-passkey-button]").await;
    browser.wait_for("[data-recovery-codes]", DEFAULT_WAIT).await;
    browser.click("[data-continue]").await;
    wait_for_path(&browser, "/shares").await;
    browser.goto(&format!("{origin}/account")).await;
    browser.click("main form[action$='/logout'] button").await;
    wait_for_path(&browser, "/").await;

    password_step(&browser, &origin, "sender@example.test").await;
    wait_for_path(&browser, "/login/second-factor").await;
    browser.click("form[data-passkey] [data-passkey-button]").await;
    wait_for_path(&browser, "/shares").await;
    browser.close().await;
    app.stop().await;
}

both_backends!(
    a_sender_adds_a_passkey_and_signs_in_with_it_alone_but_not_from_another_origin,
    a_team_that_requires_a_second_factor_lets_an_account_set_up_a_passkey_and_use_it_after_its_password
);
