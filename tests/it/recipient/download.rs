//! The download: the exact bytes to the verified browser only, by POST only, with escaped names, and
//! one common page for every link that leads nowhere.

use std::time::Duration;

use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp, count, event_kinds},
};

async fn the_whole_walk_downloads_the_exact_bytes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share).await;
    assert_eq!(page.texts(".file-name"), ["report.txt"]);
    assert_eq!(page.texts(".file-size"), ["18 バイト"], "pages speak Japanese unless asked otherwise");
    assert_eq!(page.texts(".file-sha256"), [watasu::secret::sha256_hex("the file contents\n")]);
    assert!(page.body.contains("Here is the file."));
    let response = browser.download(&share.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["content-length"], "18");
    assert_eq!(headers["content-security-policy"], "sandbox; frame-ancestors 'none'");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let kinds = event_kinds(&app, share.id).await;
    for kind in ["opened", "code_sent", "verified", "downloaded"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} event in {kinds:?}");
    }
}

async fn another_browser_with_the_same_link_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    app.verify(&app.browser(), &share).await;
    let other = app.browser();
    let landing = other.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.attr("#step", "data-step").as_deref(), Some("email"));
    let response = other.download(&share.token, &landing.csrf_token()).await;
    assert_eq!(response.status(), 403);
    let body = response.text().await.unwrap();
    assert!(!body.contains("the file contents"));
    let refused =
        count(app.db(), "SELECT count(*) FROM share_events WHERE share_id = $1 AND kind = 'refused'", share.id).await;
    assert_eq!(refused, 1);
}

async fn a_session_verified_for_one_share_is_refused_on_another(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share_a = app.create_share().await;
    let share_b = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share_a).await;
    let response = browser.download(&share_b.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 403);
}

async fn get_and_head_on_the_download_address_never_serve_or_consume(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share).await;
    let url = browser.url(&format!("/s/{}/download", share.token));
    assert_eq!(browser.client.get(&url).send().await.unwrap().status(), 405);
    assert_eq!(browser.client.head(&url).send().await.unwrap().status(), 405);
    let response = browser.download(&share.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 200);
}

async fn unknown_malformed_and_expired_links_get_one_common_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let expired = app.create_share().await;
    app.expire_share(expired.id).await;
    let browser = app.browser();
    let unknown = watasu::secret::random_token();
    let paths = [
        format!("/s/{}", expired.token),
        format!("/s/{}", unknown.expose()),
        "/s/abcdef".to_owned(),
        format!("/s/{}", "A".repeat(64)),
        "/s/..%2F..%2Fetc%2Fpasswd".to_owned(),
    ];
    let pages = futures_join(&browser, &paths).await;
    for (path, page) in paths.iter().zip(&pages) {
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.texts("h1"), ["This link is not available"], "{path}");
        assert_eq!(page.texts("main p")[0], pages[0].texts("main p")[0], "{path} differs");
        // The expired link names a share, whose page adds a way to write to its sender
        // (`recipient_ends`); the others name none and are one page.
        if path != &paths[0] {
            assert_eq!(page.texts("main"), pages[1].texts("main"), "{path} differs");
        }
    }
    let japanese = browser.get_with(&paths[0], &[("Accept-Language", "ja")]).await;
    assert_eq!(japanese.texts("h1"), ["このリンクは利用できません"]);
}

async fn html_special_and_japanese_file_names_are_escaped_and_encoded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("s@example.test", "<script>alert('s')</script>").await;
    for name in ["<img src=x onerror=alert(1)>\".txt", "見積書 2026年.pdf"] {
        let share = app.fake_share().sender(sender).file(name, b"x").create().await;
        let browser = app.browser();
        let landing = browser.get(&format!("/s/{}", share.token)).await;
        assert!(!landing.body.contains("<script>alert"), "the sender name is not escaped");
        app.smtp.set_delay(Duration::ZERO);
        let page = app.verify(&browser, &share).await;
        assert_eq!(page.texts(".file-name"), [name]);
        assert!(!page.body.contains("<img src=x"), "the file name is not escaped");
        let response = browser.download(&share.token, &page.csrf_token()).await;
        let disposition = response.headers()["content-disposition"].to_str().unwrap().to_owned();
        assert_eq!(disposition, watasu::web::content_disposition(name));
        assert!(disposition.starts_with("attachment; "));
    }
}

both_backends!(
    the_whole_walk_downloads_the_exact_bytes,
    another_browser_with_the_same_link_is_refused,
    a_session_verified_for_one_share_is_refused_on_another,
    get_and_head_on_the_download_address_never_serve_or_consume,
    unknown_malformed_and_expired_links_get_one_common_page,
    html_special_and_japanese_file_names_are_escaped_and_encoded,
);

async fn futures_join(browser: &Browser, paths: &[String]) -> Vec<Page> {
    let mut pages = Vec::new();
    for path in paths {
        pages.push(browser.get_with(path, &[("Accept-Language", "en")]).await);
    }
    pages
}
