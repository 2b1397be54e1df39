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
    post_with(browser, recipient, confirmed, File::Chosen).await
}

/// The file a form posts: one chosen now, or the upload a form that came back kept.
enum File<'a> {
    Chosen,
    Kept(&'a str),
}

async fn post_with(browser: &Browser, recipient: &str, confirmed: Option<&str>, file: File<'_>) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new().text("csrf_token", csrf);
    if let Some(confirmed) = confirmed {
        form = form.text("recipient_confirmed", confirmed.to_owned());
    }
    let form = form
        .text("recipient", recipient.to_owned())
        .text("expires_in", "1d")
        .text("message", "契約書です")
        .text("mail_lang", "en");
    let form = match file {
        File::Chosen => form.part("file", reqwest::multipart::Part::bytes(b"%PDF-1.7".to_vec()).file_name("a.pdf")),
        File::Kept(id) => {
            form.part("file", reqwest::multipart::Part::bytes(Vec::new()).file_name("")).text("upload", id.to_owned())
        }
    };
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

async fn the_file_posted_with_the_form_is_kept_for_the_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let asked = post(&browser, TYPO, None).await;
    let kept = asked.attr("input[name=upload]", "value").expect("the file is kept as an upload");
    let confirmed = post_with(&browser, TYPO, Some(TYPO), File::Kept(&kept)).await;

    assert!(asked.texts("[data-kept-upload]")[0].contains("a.pdf"), "{}", asked.body);
    assert_eq!(confirmed.status, 303, "{}", confirmed.body);
    let file: (String, String, i64) = watasu::on_db!(app.db(), |pool| {
        sqlx::query_as("SELECT original_name, sha256, size_bytes FROM files").fetch_one(pool).await.unwrap()
    });
    assert_eq!(file, ("a.pdf".to_owned(), watasu::secret::sha256_hex("%PDF-1.7"), 8));
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await,
        0,
        "the upload went with the share"
    );
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
    the_file_posted_with_the_form_is_kept_for_the_answer,
    an_ordinary_address_is_not_asked_about
);
