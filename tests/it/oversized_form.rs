//! A new-share form whose file is over the limit comes back as the form, 413, with every typed
//! value, the limit and the file's size: from the request's length when it says so at once, or
//! when the file is cut off while it streams.

use watasu::i18n::{Lang, binary_size::binary_size};

use crate::{
    both_backends,
    support::{Backend, Page, TestApp},
};

const LIMIT: u64 = 100 * 1024;

fn assert_form_back(page: &Page, what: &str) {
    assert_eq!(page.status, 413, "{what}: {}", page.body);
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some("c@example.test"), "{what}");
    assert_eq!(page.texts("#message"), ["ご確認ください <b>"], "{what}");
    let said = page.texts("#file-error").concat();
    let words = Lang::Ja.text().dashboard.form_checks.too_large;
    let (before, after) = words.split_once("{size}").unwrap();
    let after = after.replace("{limit}", &binary_size(LIMIT, Lang::Ja));
    assert!(said.starts_with(before) && said.ends_with(&after), "{what}: {said:?} does not say the size and limit");
    assert!(page.attr("[data-file-again]", "class").is_some(), "{what}: no word to choose the file again");
}

async fn a_file_over_the_limit_gives_the_form_back_with_the_limit_and_its_size(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = LIMIT).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let csrf = browser.get("/shares/new").await.csrf_token();
    let declared = browser.post_new_share(Some(&csrf), "c@example.test", "big.bin", vec![0u8; 1024 * 1024]).await;
    let streamed = browser.post_new_share(Some(&csrf), "c@example.test", "big.bin", vec![0u8; 120 * 1024]).await;

    assert_form_back(&declared, "over by its length");
    assert_form_back(&streamed, "cut off while streaming");
    let shares = crate::support::count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await;
    assert_eq!(shares, 0);
    app.stop().await;
}

both_backends!(a_file_over_the_limit_gives_the_form_back_with_the_limit_and_its_size);
