//! Every answer of the tus protocol as this server speaks it (core, creation, expiration,
//! termination, checksum), and who may ask.

use reqwest::Method;

use super::{Tus, id_of, pattern, sha256_hex, stored_sha256};
use crate::{
    both_backends,
    support::{Backend, Page, TestApp, count},
};

async fn uploads_of(app: &TestApp) -> i64 {
    count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await
}

async fn options_names_the_version_extensions_size_and_checksums_without_sign_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let anonymous = app.browser();
    let answer =
        Page::read(anonymous.client.request(Method::OPTIONS, anonymous.url("/uploads")).send().await.unwrap()).await;
    assert_eq!(answer.status, 204);
    assert_eq!(answer.header("tus-resumable"), Some("1.0.0"));
    assert_eq!(answer.header("tus-version"), Some("1.0.0"));
    assert_eq!(answer.header("tus-extension"), Some("creation,expiration,termination,checksum"));
    let max = app.state.config.settings.max_upload_bytes.to_string();
    assert_eq!(answer.header("tus-max-size"), Some(max.as_str()));
    assert_eq!(answer.header("tus-checksum-algorithm"), Some("sha1,sha256"));
}

async fn creation_answers_201_with_location_and_expiry_and_head_reports_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-create@example.test").await;
    let created = tus.create_named(11, "報告.txt").await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.header("tus-resumable"), Some("1.0.0"));
    let location = created.header("location").unwrap().to_owned();
    assert!(watasu::session::is_token_shaped(id_of(&location)), "{location}");
    let expires = created.header("upload-expires").unwrap().to_owned();
    assert!(expires.ends_with(" GMT") && chrono::DateTime::parse_from_rfc2822(&expires).is_ok(), "{expires}");
    let head = tus.head(&location).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("upload-offset"), Some("0"));
    assert_eq!(head.header("upload-length"), Some("11"));
    assert_eq!(head.header("cache-control"), Some("no-store"));
    assert_eq!(head.header("tus-resumable"), Some("1.0.0"));
    assert!(head.header("upload-metadata").unwrap().starts_with("filename "));
    assert!(head.header("upload-expires").is_some());
    assert!(head.body.is_empty());
    let key: String = watasu::on_db!(app.db(), |pool| sqlx::query_scalar("SELECT storage_key FROM uploads")
        .fetch_one(pool)
        .await
        .unwrap());
    assert_ne!(key, id_of(&location), "the id is not the storage key");
    assert!(app.data_dir.path().join("files").join(format!(".part-{key}")).exists());
}

async fn a_request_without_tus_resumable_is_412_and_bad_creations_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-bad@example.test").await;
    let bare = tus
        .browser
        .client
        .post(tus.browser.url("/uploads"))
        .header("X-CSRF-Token", &tus.csrf)
        .header("Sec-Fetch-Site", "same-origin")
        .header("Upload-Length", "5")
        .send()
        .await
        .unwrap();
    let bare = Page::read(bare).await;
    assert_eq!(bare.status, 412);
    assert_eq!(bare.header("tus-version"), Some("1.0.0"));
    assert_eq!(bare.header("tus-resumable"), Some("1.0.0"));
    let no_length = Page::read(tus.request(Method::POST, "/uploads").send().await.unwrap()).await;
    assert_eq!(no_length.status, 400);
    let deferred = tus.request(Method::POST, "/uploads").header("Upload-Defer-Length", "1").send().await.unwrap();
    assert_eq!(deferred.status(), 400);
    let max = app.state.config.settings.max_upload_bytes;
    let over =
        tus.request(Method::POST, "/uploads").header("Upload-Length", (max + 1).to_string()).send().await.unwrap();
    assert_eq!(over.status(), 413);
    let bad_metadata = tus
        .request(Method::POST, "/uploads")
        .header("Upload-Length", "5")
        .header("Upload-Metadata", "filename !!!not-base64")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_metadata.status(), 400);
    assert_eq!(uploads_of(&app).await, 0);
}

async fn patches_append_in_order_and_each_wrong_patch_has_its_status(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-patch@example.test").await;
    let content = pattern(10);
    let path = tus.create(10).await;
    let wrong_type = tus
        .request(Method::PATCH, &path)
        .header("Content-Type", "application/octet-stream")
        .header("Upload-Offset", "0")
        .body(content.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 415);
    let no_offset = tus
        .request(Method::PATCH, &path)
        .header("Content-Type", "application/offset+octet-stream")
        .body(content.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(no_offset.status(), 400);
    assert_eq!(tus.patch(&path, 3, &content[..3]).await.status, 409);
    assert_eq!(tus.patch(&path, 0, &pattern(11)).await.status, 413);
    let first = tus.patch(&path, 0, &content[..4]).await;
    assert_eq!(first.status, 204, "{}", first.body);
    assert_eq!(first.header("upload-offset"), Some("4"));
    assert!(first.header("upload-expires").is_some());
    assert_eq!(tus.patch(&path, 0, &content[..4]).await.status, 409);
    let rest = tus.patch(&path, 4, &content[4..]).await;
    assert_eq!(rest.header("upload-offset"), Some("10"));
    assert_eq!(stored_sha256(&app, &path).await, Some(sha256_hex(&content)));
    let again = tus.patch(&path, 10, b"").await;
    assert_eq!(again.status, 204, "a finished upload takes an empty PATCH at its end");
    assert_eq!(again.header("upload-offset"), Some("10"));
    assert_eq!(tus.patch(&path, 10, b"x").await.status, 413);
}

async fn a_checksum_that_does_not_match_is_460_and_moves_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-sum@example.test").await;
    let path = tus.create(10).await;
    // sha1("hello") and sha256("hello"), base64.
    let sha1 = ("Upload-Checksum", "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=");
    let sha256 = ("Upload-Checksum", "sha256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=");
    assert_eq!(tus.patch_with(&path, 0, b"hellO".to_vec(), &[sha1]).await.status, 460);
    assert_eq!(tus.offset(&path).await, 0);
    assert_eq!(
        tus.patch_with(&path, 0, b"hello".to_vec(), &[("Upload-Checksum", "md5 XUFAKrxLKna5cZ2REBfFkg==")])
            .await
            .status,
        400
    );
    let matched = tus.patch_with(&path, 0, b"hello".to_vec(), &[sha1]).await;
    assert_eq!((matched.status.as_u16(), matched.header("upload-offset")), (204, Some("5")));
    assert_eq!(tus.patch_with(&path, 5, b"hello".to_vec(), &[sha256]).await.status, 204);
    assert_eq!(stored_sha256(&app, &path).await, Some(sha256_hex(b"hellohello")));
}

async fn termination_deletes_the_bytes_at_once_and_the_upload_is_gone(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-delete@example.test").await;
    let path = tus.create(10).await;
    tus.patch(&path, 0, b"abc").await;
    let deleted = tus.delete(&path).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(deleted.header("tus-resumable"), Some("1.0.0"));
    assert_eq!(tus.head(&path).await.status, 404);
    let finished = tus.upload(b"done").await;
    assert_eq!(tus.delete(&finished).await.status, 204, "a finished upload is terminated too");
    assert_eq!(uploads_of(&app).await, 0);
    let leftover: Vec<_> = std::fs::read_dir(app.data_dir.path().join("files"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".tmp-"))
        .collect();
    assert!(leftover.is_empty(), "{leftover:?}");
}

async fn post_with_a_method_override_acts_as_that_method(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-override@example.test").await;
    let path = tus.create(3).await;
    let patched = tus
        .request(Method::POST, &path)
        .header("X-HTTP-Method-Override", "PATCH")
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .body("abc")
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    assert_eq!(patched.headers()["upload-offset"], "3");
    let head = tus.request(Method::POST, &path).header("X-HTTP-Method-Override", "HEAD").send().await.unwrap();
    assert_eq!((head.status().as_u16(), head.headers()["upload-offset"].to_str().unwrap()), (200, "3"));
    let deleted = tus.request(Method::POST, &path).header("X-HTTP-Method-Override", "DELETE").send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(tus.head(&path).await.status, 404);
}

async fn anonymous_requests_and_missing_or_wrong_csrf_tokens_are_403_and_create_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-csrf@example.test").await;
    let path = tus.create(3).await;
    let anonymous = Tus { browser: app.browser(), csrf: tus.csrf.clone() };
    assert_eq!(anonymous.create_named(3, "a.txt").await.status, 403);
    assert_eq!(anonymous.head(&path).await.status, 403);
    let same_browser = crate::support::Browser {
        client: tus.browser.client.clone(),
        jar: tus.browser.jar.clone(),
        base: tus.browser.base.clone(),
    };
    let wrong = Tus { browser: same_browser, csrf: "0".repeat(64) };
    assert_eq!(wrong.create_named(3, "a.txt").await.status, 403);
    assert_eq!(wrong.patch(&path, 0, b"abc").await.status, 403);
    let missing = tus
        .browser
        .client
        .post(tus.browser.url("/uploads"))
        .header("Tus-Resumable", "1.0.0")
        .header("Sec-Fetch-Site", "same-origin")
        .header("Upload-Length", "3")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 403);
    assert_eq!(missing.headers()["tus-resumable"], "1.0.0");
    let cross_site = tus
        .browser
        .client
        .post(tus.browser.url("/uploads"))
        .header("Tus-Resumable", "1.0.0")
        .header("X-CSRF-Token", &tus.csrf)
        .header("Sec-Fetch-Site", "cross-site")
        .header("Upload-Length", "3")
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), 403);
    assert_eq!(uploads_of(&app).await, 1);
    assert_eq!(tus.offset(&path).await, 0);
}

async fn another_senders_upload_is_404_for_every_method(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = Tus::sender(&app, "tus-owner@example.test").await;
    let other = Tus::sender(&app, "tus-other@example.test").await;
    let path = owner.create(3).await;
    assert_eq!(other.head(&path).await.status, 404);
    assert_eq!(other.patch(&path, 0, b"abc").await.status, 404);
    assert_eq!(other.delete(&path).await.status, 404);
    assert_eq!(other.head(&format!("/uploads/{}", "ab".repeat(32))).await.status, 404);
    assert_eq!(owner.offset(&path).await, 0);
}

async fn finished_uploads_not_yet_shared_count_against_the_reservation(backend: Backend) {
    let max = 1000;
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = max).await;
    let tus = Tus::sender(&app, "tus-held@example.test").await;
    let first = tus.upload(&pattern(max as usize)).await;
    tus.upload(&pattern(max as usize)).await;

    // Twice the largest file is held already, finished or not: nothing more may be reserved.
    let third = tus.create_named(1, "one-more.txt").await;

    assert_eq!(third.status, 507, "{}", third.body);
    assert_eq!(tus.delete(&first).await.status, 204);
    assert_eq!(tus.create_named(1, "one-more.txt").await.status, 201);
}

async fn the_reservation_refuses_with_507_and_termination_frees_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-reserve@example.test").await;
    let max = app.state.config.settings.max_upload_bytes;
    let first = tus.create(max).await;
    let second = tus.create(max).await;
    let third = tus.create_named(1, "one-more.txt").await;
    assert_eq!(third.status, 507, "{}", third.body);
    assert!(third.body.contains("reserve"), "{}", third.body);
    assert_eq!(tus.delete(&second).await.status, 204);
    assert_eq!(tus.create_named(1, "one-more.txt").await.status, 201);
    // Only the sender's own uploads count: another sender is not held up.
    let other = Tus::sender(&app, "tus-reserve-2@example.test").await;
    assert_eq!(other.create_named(max, "big.bin").await.status, 201);
    assert_eq!(tus.head(&first).await.status, 200);
}

both_backends!(
    options_names_the_version_extensions_size_and_checksums_without_sign_in,
    creation_answers_201_with_location_and_expiry_and_head_reports_it,
    a_request_without_tus_resumable_is_412_and_bad_creations_are_refused,
    patches_append_in_order_and_each_wrong_patch_has_its_status,
    a_checksum_that_does_not_match_is_460_and_moves_nothing,
    termination_deletes_the_bytes_at_once_and_the_upload_is_gone,
    post_with_a_method_override_acts_as_that_method,
    anonymous_requests_and_missing_or_wrong_csrf_tokens_are_403_and_create_nothing,
    another_senders_upload_is_404_for_every_method,
    finished_uploads_not_yet_shared_count_against_the_reservation,
    the_reservation_refuses_with_507_and_termination_frees_it
);
