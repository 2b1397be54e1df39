//! A likely typo in the recipient's address (`tanaka@example`) is asked about before the share is
//! made, in a real Chromium, with every typed value and the file kept: with JavaScript on a desktop
//! (Japanese) the file went through the resumable upload, without it on a phone (English) in the
//! form itself. "Yes, send to it" then makes the share of that file for that address. The harness
//! checks each page state with axe-core.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        count,
    },
};

const TYPO: &str = "tanaka@example";
const MESSAGE: &str = "契約書です";
const SUBMIT: &str = "main form[data-upload] > button[type=submit]";

async fn shares(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await
}

async fn typo_walk(app: &TestApp, options: BrowserOptions, lang: Lang, email: &str) {
    app.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
    let file = tempfile::Builder::new().suffix(".pdf").tempfile().unwrap();
    std::fs::write(file.path(), b"%PDF-1.7 contract").unwrap();
    let browser = BrowserSession::start(options).await;
    browser.sign_in(&app.base, email).await;

    browser.goto(&format!("{}/shares/new", app.base)).await;
    browser.fill("#recipient", TYPO).await;
    browser.fill("#message", MESSAGE).await;
    browser.find("input[type=file]").await.send_keys(file.path().to_str().unwrap()).await.expect("choosing the file");
    let before = shares(app).await;
    browser.click(SUBMIT).await;

    browser.wait_for("[data-address-check]", DEFAULT_WAIT).await;
    let words = &lang.text().dashboard.form_checks;
    assert_eq!(browser.text("[data-address-check] [role=alert]").await, format!("{} {TYPO}", words.address_question));
    assert_eq!(browser.attr("#recipient", "value").await.as_deref(), Some(TYPO));
    assert_eq!(browser.text("#message").await, MESSAGE);
    assert_eq!(shares(app).await, before, "a share was made before the address was confirmed");
    browser.assert_no_horizontal_overflow("the address question").await;
    assert!(browser.exists("[data-kept-upload]").await, "the file was not kept");
    assert!(!browser.exists("[data-file-again]").await, "the file is asked for again");
    browser.click("[data-address-right]").await;

    browser.wait_until("the created page", DEFAULT_WAIT, async |b| b.current_path().await.ends_with("/created")).await;
    assert_eq!(shares(app).await, before + 1);
    let to_typo =
        count(app.db(), "SELECT count(*) FROM shares WHERE recipient_email = 'tanaka@example' AND id > $1", 0);
    assert_eq!(to_typo.await, before + 1, "the share is not for the confirmed address");
    let digest: String = watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT sha256 FROM files ORDER BY id DESC LIMIT 1").fetch_one(pool).await.unwrap()
    });
    assert_eq!(digest, watasu::secret::sha256_hex("%PDF-1.7 contract"), "the share holds another file");
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

async fn a_likely_typo_is_asked_about_and_kept_in_a_browser(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    typo_walk(&app, BrowserOptions::desktop(), Lang::Ja, "typo-js@example.test").await;
    typo_walk(&app, BrowserOptions::phone().without_javascript().language("en"), Lang::En, "typo-nojs@example.test")
        .await;
    app.stop().await;
}

both_backends!(a_likely_typo_is_asked_about_and_kept_in_a_browser);
