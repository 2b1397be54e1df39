//! Single sign-on in a real Chromium, through the whole redirect dance with a real OpenID provider
//! (panva's oidc-provider): the sign-in page's button, the provider's login and consent pages, and
//! back at the dashboard with a new account, in both languages at phone and desktop width; a
//! denied consent first leads to a page that explains and links back to sign-in. The harness checks
//! every page of ours met with axe-core (the provider's pages are not ours).

use crate::{
    both_backends,
    support::{
        Backend,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        oidc::{Mode, app_with_provider},
    },
};

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

/// From the app's sign-in page to the provider's consent page, signing in there as `login` when
/// the provider asks (it remembers a person who signed in with it before).
async fn to_the_providers_consent(browser: &BrowserSession, base: &str, login: &str) {
    browser.goto(&format!("{base}/login")).await;
    browser.click("a[data-sso]").await;
    browser.wait_for("form[data-prompt]", DEFAULT_WAIT).await;
    if browser.exists("form[data-prompt=login]").await {
        browser.fill("#login", login).await;
        browser.click("form[data-prompt=login] button").await;
    }
    browser.wait_for("form[data-prompt=consent]", DEFAULT_WAIT).await;
}

async fn a_person_signs_in_through_the_provider_and_a_denied_consent_explains_itself(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    for (i, (language, options)) in
        [("ja", BrowserOptions::phone()), ("en", BrowserOptions::desktop())].into_iter().enumerate()
    {
        let browser = BrowserSession::start(options.language(language)).await;
        let email = format!("person{i}@corp.test");

        to_the_providers_consent(&browser, &app.base, &email).await;
        browser.click("form[action$=abort] button").await;
        browser.wait_for("[data-reason=denied]", DEFAULT_WAIT).await;
        browser.click("main a[href$='/login']").await;
        wait_for_path(&browser, "/login").await;

        to_the_providers_consent(&browser, &app.base, &email).await;
        browser.click("form[data-prompt=consent] button").await;
        wait_for_path(&browser, "/shares").await;
        browser.goto(&format!("{}/account", app.base)).await;
        assert_eq!(browser.text(".account-email").await, email);
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(a_person_signs_in_through_the_provider_and_a_denied_consent_explains_itself);
