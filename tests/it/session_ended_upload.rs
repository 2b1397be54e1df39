//! A new share's form posted after the sender's session ended: the whole body is read before the
//! answer, so a client that sends all of it gets the redirect to the sign-in page (a browser
//! answered early shows "connection reset"), and that page says to choose the file again.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp, count},
};

/// Bigger than the socket buffers between the two ends, so an answer sent before the body was
/// read would leave part of it unsent.
const FILE_BYTES: usize = 16 * 1024 * 1024;
const CHUNK_BYTES: usize = 1024 * 1024;

async fn a_form_posted_after_the_session_ended_is_read_whole_and_leads_to_sign_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("sender@example.test", "Sender Sato", PASSWORD).await;
    let browser = app.sign_in("sender@example.test", PASSWORD).await;
    let csrf = browser.get("/shares/new").await.csrf_token();
    let ended = browser.post_form("/logout", &[("csrf_token", &csrf)]).await;
    assert_eq!(ended.status, 303);

    let sent = Arc::new(AtomicUsize::new(0));
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf)
        .text("recipient", "client@example.test")
        .text("expires_in", "1d")
        .part("file", reqwest::multipart::Part::stream(counted_file(sent.clone())).file_name("big.bin"));
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    let answer = request.multipart(form).send().await.expect("the answer, not a connection reset");

    assert_eq!(answer.status(), 303);
    // The answer came only after the server had taken every byte of the file.
    assert_eq!(sent.load(Ordering::SeqCst), FILE_BYTES);
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, "/login?upload_lost=1");
    let login = browser.get_with(&location, &[("Accept-Language", "en")]).await;
    assert_eq!(login.texts("[data-upload-lost]"), [Lang::En.text().dashboard.upload_session_ended]);
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await, 0);
}

/// The file's bytes as a stream that counts what the client was asked for, chunk by chunk.
fn counted_file(sent: Arc<AtomicUsize>) -> reqwest::Body {
    let chunks = (0..FILE_BYTES / CHUNK_BYTES).map(move |_| {
        sent.fetch_add(CHUNK_BYTES, Ordering::SeqCst);
        Ok::<_, std::io::Error>(vec![7u8; CHUNK_BYTES])
    });
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

both_backends!(a_form_posted_after_the_session_ended_is_read_whole_and_leads_to_sign_in);
