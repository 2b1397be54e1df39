//! A recipient address that is valid but likely mistyped (`tanaka@example`, no dot after the @)
//! is asked about on the new-share form before anything is made, with every typed value kept;
//! once the sender says it is right, the share is made for it. `watasu share create` only warns.

use crate::{
    both_backends,
    cli_output::env_of,
    lifecycle::quiet_app,
    support::{Backend, Browser, Page, TestApp, count, process::run_watasu},
};

const TYPO: &str = "tanaka@example";

/// Posts the new-share form as a browser without JavaScript would, with `confirmed` as the
/// address the sender said is right (none: not asked yet).
async fn post(browser: &Browser, recipient: &str, confirmed: Option<&str>) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new().text("csrf_token", csrf);
    if let Some(confirmed) = confirmed {
        form = form.text("recipient_confirmed", confirmed.to_owned());
    }
    let form = form
        .text("recipient", recipient.to_owned())
        .text("expires_in", "1d")
        .text("message", "契約書です")
        .text("mail_lang", "en")
        .part("file", reqwest::multipart::Part::bytes(b"%PDF-1.7".to_vec()).file_name("a.pdf"));
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.multipart(form).send().await.unwrap()).await
}

async fn shares(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await
}

async fn a_likely_typo_is_asked_about_with_every_value_kept(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let page = post(&browser, TYPO, None).await;

    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.texts("[data-address-check] strong"), [TYPO]);
    assert_eq!(page.attr("input[name=recipient_confirmed]", "value").as_deref(), Some(TYPO));
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some(TYPO));
    assert_eq!(page.texts("#message"), ["契約書です"]);
    assert_eq!(page.attr("#mail_lang option[selected]", "value").as_deref(), Some("en"));
    assert_eq!(shares(&app).await, 0, "a share was made before the address was confirmed");
    app.stop().await;
}

async fn a_confirmed_address_is_used_and_another_typo_is_asked_about_again(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let other = post(&browser, "tanaka@exampel", Some(TYPO)).await;
    let confirmed = post(&browser, TYPO, Some(TYPO)).await;

    assert_eq!(other.texts("[data-address-check] strong"), ["tanaka@exampel"]);
    assert_eq!(confirmed.status, 303, "{}", confirmed.body);
    assert_eq!(shares(&app).await, 1);
    app.stop().await;
}

async fn an_ordinary_address_is_not_asked_about(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let page = post(&browser, "tanaka@example.com", None).await;

    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(shares(&app).await, 1);
    app.stop().await;
}

async fn share_create_warns_about_a_likely_typo_without_asking(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender("sender@example.test", "Sender Sato").await;
    let file = app.data_dir.path().join("report.txt");
    std::fs::write(&file, b"the file\n").unwrap();
    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["share", "create", "--from", "sender@example.test", "--to", TYPO, "--file", file.to_str().unwrap()];

    let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu(&args, &env));

    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.lines().any(|line| line.starts_with("warning: --to tanaka@example:")), "{stderr}");
    assert_eq!(shares(&app).await, 1);
}

both_backends!(
    share_create_warns_about_a_likely_typo_without_asking,
    a_likely_typo_is_asked_about_with_every_value_kept,
    a_confirmed_address_is_used_and_another_typo_is_asked_about_again,
    an_ordinary_address_is_not_asked_about
);
