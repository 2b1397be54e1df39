//! A new-share form whose file is over the limit comes back as the form, 413, with every typed
//! value, the limit and the file's size: from the request's length when it says so at once, or
//! when the file is cut off while it streams ("at least" that much when the request has no length).

use watasu::i18n::{Lang, format::human_size};

use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp},
};

const LIMIT: u64 = 100 * 1024;

fn assert_form_back(page: &Page, what: &str) {
    assert_eq!(page.status, 413, "{what}: {}", page.body);
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some("c@example.test"), "{what}");
    assert_eq!(page.texts("#message"), ["ご確認ください <b>"], "{what}");
    let said = page.texts("#file-error").concat();
    let words = Lang::Ja.text().dashboard.form_checks.too_large;
    let (before, after) = words.split_once("{size}").unwrap();
    let after = after.replace("{limit}", &human_size(LIMIT, Lang::Ja));
    assert!(said.starts_with(before) && said.ends_with(&after), "{what}: {said:?} does not say the size and limit");
    assert!(page.attr("[data-file-again]", "class").is_some(), "{what}: no word to choose the file again");
}

async fn a_file_over_the_limit_gives_the_form_back_with_the_limit_and_its_size(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = LIMIT).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let csrf = browser.get("/shares/new").await.csrf_token();
    // Over the largest form (the limit and 64 KiB), within what is read before the answer.
    let declared = browser.post_new_share(Some(&csrf), "c@example.test", "big.bin", vec![0u8; 300 * 1024]).await;
    let streamed = browser.post_new_share(Some(&csrf), "c@example.test", "big.bin", vec![0u8; 120 * 1024]).await;

    assert_form_back(&declared, "over by its length");
    assert_form_back(&streamed, "cut off while streaming");
    let shares = crate::support::count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await;
    assert_eq!(shares, 0);
    app.stop().await;
}

/// Posts the form with the file as a stream of unknown length (sent chunked, no Content-Length).
async fn post_without_length(browser: &Browser, csrf: &str, size: usize) -> Page {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..size / 1024).map(|_| Ok(vec![0u8; 1024])).collect();
    let file = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf.to_owned())
        .text("recipient", "c@example.test")
        .text("expires_in", "1d")
        .text("message", "ご確認ください <b>")
        .part("file", reqwest::multipart::Part::stream(file).file_name("big.bin"));
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.multipart(form).send().await.unwrap()).await
}

async fn a_file_cut_off_without_a_length_is_said_to_be_at_least_the_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = LIMIT).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let csrf = browser.get("/shares/new").await.csrf_token();
    let page = post_without_length(&browser, &csrf, 300 * 1024).await;

    assert_eq!(page.status, 413, "{}", page.body);
    let said = page.texts("#file-error").concat();
    let words = Lang::Ja.text().dashboard.form_checks.too_large_at_least;
    let (before, after) = words.split_once("{size}").unwrap();
    assert!(said.starts_with(before), "{said:?}");
    assert!(said.ends_with(&after.replace("{limit}", &human_size(LIMIT, Lang::Ja))), "{said:?}");
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some("c@example.test"));
    app.stop().await;
}

both_backends!(
    a_file_over_the_limit_gives_the_form_back_with_the_limit_and_its_size,
    a_file_cut_off_without_a_length_is_said_to_be_at_least_the_limit
);
