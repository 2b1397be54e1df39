//! A share made from a finished upload: the new-share form names the upload instead of carrying
//! the file, and everything else is as for a file in the form.

use std::time::Duration;

use super::{Tus, id_of, pattern, sha256_hex};
use crate::support::{Backend, Page, TestApp, count};

const RECIPIENT: &str = "client@example.test";

/// Posts the new-share form with the upload's id as its last field, as the page's JS does.
async fn share_upload(tus: &Tus, recipient: &str, upload_path: &str) -> Page {
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", tus.csrf.clone())
        .text("recipient", recipient.to_owned())
        .text("expires_in", "1d")
        .text("message", "ご確認ください")
        .text("mail_lang", "ja")
        .text("notify", "1")
        .text("upload", id_of(upload_path).to_owned());
    let request = tus.browser.client.post(tus.browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    let page = Page::read(request.multipart(form).send().await.unwrap()).await;
    if page.status == 303 { page.follow_created(&tus.browser.client, &tus.browser.base).await } else { page }
}

async fn shares(app: &TestApp) -> i64 {
    count(app.db(), "SELECT COUNT(*) FROM shares WHERE $1 = $1", 0).await
}

async fn uploads(app: &TestApp) -> i64 {
    count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await
}

async fn a_finished_upload_becomes_a_share_with_its_digest_and_the_recipients_mail(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-share@example.test").await;
    let content = pattern(100_000);
    let path = tus.upload(&content).await;
    let page = share_upload(&tus, RECIPIENT, &path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.attr("#share-link", "value").unwrap().contains("/s/"));
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, [RECIPIENT]);
    let (name, digest, crc32, size): (String, String, i64, i64) = watasu::on_db!(app.db(), |pool| {
        sqlx::query_as("SELECT original_name, sha256, crc32, size_bytes FROM files").fetch_one(pool).await.unwrap()
    });
    let expected = ("report.txt", sha256_hex(&content), i64::from(crc32fast::hash(&content)), 100_000);
    assert_eq!((name.as_str(), digest, crc32, size), expected);
    assert_eq!((shares(&app).await, uploads(&app).await), (1, 0));
}

async fn a_refused_form_keeps_the_upload_and_names_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-keep@example.test").await;
    let path = tus.upload(b"kept across a refusal").await;
    let page = share_upload(&tus, "not an address", &path).await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("input[name=upload]", "value").as_deref(), Some(id_of(&path)));
    assert!(page.texts("[data-kept-upload]")[0].contains("report.txt"), "{}", page.body);
    assert_eq!(page.attr("input[name=file]", "required"), None, "the file input is optional then");
    assert_eq!((shares(&app).await, uploads(&app).await), (0, 1));
    assert_eq!(share_upload(&tus, RECIPIENT, &path).await.status, 200, "the kept upload is shared after all");
}

async fn a_form_submitted_twice_creates_one_share(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-twice@example.test").await;
    let path = tus.upload(b"once only").await;
    let (first, second) = tokio::join!(share_upload(&tus, RECIPIENT, &path), share_upload(&tus, RECIPIENT, &path));
    let mut statuses = [first.status.as_u16(), second.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 400], "the second finds the upload taken, whenever it looks");
    assert_eq!(shares(&app).await, 1);
    let again = share_upload(&tus, RECIPIENT, &path).await;
    assert_eq!(again.status, 400);
    assert!(!again.texts(".error-text").is_empty());
    assert_eq!(shares(&app).await, 1);
}

async fn another_senders_upload_or_an_unfinished_one_is_refused_and_creates_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = Tus::sender(&app, "tus-own@example.test").await;
    let other = Tus::sender(&app, "tus-thief@example.test").await;
    let finished = owner.upload(b"not yours").await;
    let refused = share_upload(&other, RECIPIENT, &finished).await;
    assert_eq!(refused.status, 400);
    assert!(!refused.texts(".error-text").is_empty());
    let unfinished = owner.create(10).await;
    owner.patch(&unfinished, 0, b"half").await;
    assert_eq!(share_upload(&owner, RECIPIENT, &unfinished).await.status, 400);
    assert_eq!(shares(&app).await, 0);
    assert_eq!(count(app.db(), "SELECT COUNT(*) FROM files WHERE $1 = $1", 0).await, 0);
    assert_eq!(uploads(&app).await, 2);
}

crate::both_backends!(
    a_finished_upload_becomes_a_share_with_its_digest_and_the_recipients_mail,
    a_refused_form_keeps_the_upload_and_names_it,
    a_form_submitted_twice_creates_one_share,
    another_senders_upload_or_an_unfinished_one_is_refused_and_creates_nothing
);
