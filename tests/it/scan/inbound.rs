//! A request's uploaded files are scanned whenever clamd is configured, outbound scanning on or
//! off: each is held from the sender (no download, no ZIP) until clean; a virus refuses that file
//! alone (its bytes deleted, the uploader's and the sender's pages say which), and the request
//! goes on; clamd down keeps the file held until it answers; a file too large for clamd goes by
//! the admin's policy, as an outbound one does.

use std::time::Duration;

use watasu::{i18n::Lang, request::RequestLimits, scan::TooLargePolicy, storage::StoreError};

use super::{held::backoff_passes, held::wait_for_attempts, scanning_app, sender_reads};
use crate::{
    file_requests::{TestRequest, make_request, roomy, upload, verify_uploader},
    support::{
        Backend, Browser, PASSWORD, Page, TestApp, clamd,
        clamd::{Clamd, EICAR, EICAR_NAME, STREAM_MAX},
        count, event_kinds, texts,
    },
};

const SENDER: &str = "sender@example.test";

/// The app scanning inbound files only: outbound scanning is off.
async fn inbound_app(backend: Backend, clamd: &str) -> TestApp {
    let app = scanning_app(backend, clamd, |s| s.scan.scan_outbound = false).await;
    sender_reads(&app, Lang::En).await;
    app
}

/// A request whose uploader is verified: the request and the uploader's browser.
pub(crate) async fn open_request(app: &TestApp) -> (TestRequest, Browser) {
    let request = make_request(app, roomy()).await;
    let uploader = app.browser();
    verify_uploader(app, &uploader, &request.token).await;
    (request, uploader)
}

/// The uploader leaves `files`; answers the upload page after.
pub(crate) async fn leave(uploader: &Browser, request: &TestRequest, files: &[(&str, &[u8])]) -> Page {
    let csrf = uploader.open_link(&request.token).await.csrf_token();
    let answer = upload(uploader, &request.token, &csrf, files).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    uploader.open_link(&request.token).await
}

pub(crate) async fn finish(uploader: &Browser, request: &TestRequest) {
    let csrf = uploader.open_link(&request.token).await.csrf_token();
    let finished = uploader.post_form(&format!("/s/{}/finish", request.token), &[("csrf_token", &csrf)]).await;
    assert_eq!(finished.status, 303, "{}", finished.body);
}

/// Waits until the request's files are in `states`, in order.
pub(crate) async fn wait_for_inbound(app: &TestApp, request: &TestRequest, states: &[&str]) {
    crate::support::eventually(Duration::from_secs(30), "the scan's verdicts", async || {
        inbound_states(app, request).await == states
    })
    .await;
}

async fn inbound_states(app: &TestApp, request: &TestRequest) -> Vec<String> {
    texts(
        app.db(),
        "SELECT COALESCE(f.scan_state, 'none') FROM shares s JOIN files f ON f.handover_id = s.handover_id
          WHERE s.id = $1 ORDER BY f.position",
        request.id,
    )
    .await
}

/// The request's page as its sender reads it, in English.
async fn sender_page(sender: &Browser, request: &TestRequest) -> Page {
    let page = sender.get(&format!("/requests/{}?lang=en", request.id)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

async fn status_of(sender: &Browser, path: &str) -> u16 {
    sender.client.get(sender.url(path)).send().await.unwrap().status().as_u16()
}

async fn a_clean_inbound_file_is_scanned_with_outbound_scanning_off_and_released_to_the_sender(backend: Backend) {
    let clamd = tokio::task::spawn_blocking(|| clamd::shared().url()).await.unwrap();
    let app = inbound_app(backend, &clamd).await;
    let (request, uploader) = open_request(&app).await;

    leave(&uploader, &request, &[("contract.pdf", b"%PDF signed contract")]).await;
    wait_for_inbound(&app, &request, &["clean"]).await;

    let page = uploader.open_link(&request.token).await;
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["clean"], "{}", page.body);
    finish(&uploader, &request).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender_page(&sender, &request).await;
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["clean"]);
    assert_eq!(page.texts(".download-one").len(), 1, "{}", page.body);
    let one = sender.client.get(sender.url(&format!("/requests/{}/files/0", request.id))).send().await.unwrap();
    assert_eq!(one.status(), 200);
    assert_eq!(one.bytes().await.unwrap().as_ref(), b"%PDF signed contract");
}

async fn an_infected_inbound_file_is_refused_alone_and_the_request_goes_on(backend: Backend) {
    let clamd = tokio::task::spawn_blocking(|| clamd::shared().url()).await.unwrap();
    let app = inbound_app(backend, &clamd).await;
    let (request, uploader) = open_request(&app).await;

    leave(&uploader, &request, &[("invoice.com", EICAR)]).await;
    wait_for_inbound(&app, &request, &["infected"]).await;
    let key = texts(app.db(), "SELECT storage_key FROM files WHERE $1 = $1", 0).await.remove(0);
    let purged = "SELECT count(*) FROM files WHERE purged_at IS NOT NULL AND $1 = $1";
    crate::support::eventually(Duration::from_secs(30), "the refused file's deletion", async || {
        count(app.db(), purged, 0).await == 1
    })
    .await;
    assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)), "the virus is still stored");

    // The uploader's page says which file and why, and offers nothing to remove.
    let page = uploader.open_link(&request.token).await;
    assert_eq!(page.texts(".arrived .file-name"), ["invoice.com"]);
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["infected"]);
    let mark = &page.texts(".arrived [data-scan]")[0];
    assert!(mark.contains(EICAR_NAME) && mark.contains("受け付けませんでした"), "{}", page.body);
    assert!(page.texts(".arrived .remove-file").is_empty(), "{}", page.body);

    // The request still takes files, and the refused one counts for nothing.
    leave(&uploader, &request, &[("contract.pdf", b"%PDF signed contract")]).await;
    wait_for_inbound(&app, &request, &["infected", "clean"]).await;
    finish(&uploader, &request).await;

    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender_page(&sender, &request).await;
    assert_eq!(page.attr("#request-state", "data-state").as_deref(), Some("answered"));
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["infected", "clean"]);
    assert_eq!(page.attrs(".download-one", "href").len(), 1, "{}", page.body);
    let refused_line = Lang::En.text().request.event_file_refused.replace("{name}", "invoice.com");
    assert!(page.texts(".timeline li").iter().any(|line| line.ends_with(&refused_line)), "{}", page.body);
    assert!(event_kinds(&app, request.id).await.contains(&"file_refused".to_owned()));
    assert_eq!(status_of(&sender, &format!("/requests/{}/files/0", request.id)).await, 404);
    let archive = sender.client.get(sender.url(&format!("/requests/{}/archive", request.id))).send().await.unwrap();
    assert_eq!(archive.status(), 200);
    let archive = archive.bytes().await.unwrap();
    let only_clean: [(&str, &[u8]); 1] = [("contract.pdf", b"%PDF signed contract")];
    assert_eq!(
        crate::recipient_bundles::opened_with_python(&archive),
        crate::recipient_bundles::entries_of(&only_clean)
    );
}

async fn an_inbound_file_is_held_from_the_sender_while_clamd_is_down_and_released_when_it_is_back(backend: Backend) {
    let mut clamd = tokio::task::spawn_blocking(Clamd::start).await.unwrap();
    let clamd_url = clamd.url();
    clamd.stop();
    let app = inbound_app(backend, &clamd_url).await;
    let (request, uploader) = open_request(&app).await;

    let page = leave(&uploader, &request, &[("contract.pdf", b"%PDF signed contract")]).await;
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["pending"], "{}", page.body);
    wait_for_attempts(&app, request.id, 1).await;
    // Finishing while a file is being checked is allowed; the mail says it is being checked.
    let before = app.smtp.messages().len();
    finish(&uploader, &request).await;
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(30)).await;
    let mail = mails.iter().find(|m| m.to == [SENDER]).expect("the sender is mailed");
    let pending = Lang::En.text().request.scan_pending;
    assert!(mail.text().contains(&format!("contract.pdf ({pending})")), "{}", mail.text());

    assert_eq!(inbound_states(&app, &request).await, ["pending"]);
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender_page(&sender, &request).await;
    assert_eq!(page.attrs(".arrived [data-scan]", "data-scan"), ["pending"]);
    assert!(page.texts(".download-one").is_empty() && page.texts("#download-all").is_empty(), "{}", page.body);
    assert_eq!(page.texts("#delete-now").len(), 1, "a file being checked can still be deleted");
    assert_eq!(status_of(&sender, &format!("/requests/{}/files/0", request.id)).await, 404);
    assert_eq!(status_of(&sender, &format!("/requests/{}/archive", request.id)).await, 404);

    let clamd = tokio::task::spawn_blocking(move || {
        clamd.start_again();
        clamd
    })
    .await
    .unwrap();
    backoff_passes(&app).await;
    wait_for_inbound(&app, &request, &["clean"]).await;
    let page = sender_page(&sender, &request).await;
    assert_eq!(page.texts(".download-one").len(), 1, "{}", page.body);
    assert_eq!(status_of(&sender, &format!("/requests/{}/files/0", request.id)).await, 200);
    drop(clamd);
}

async fn an_inbound_file_too_large_for_clamd_is_released_marked_under_the_release_policy(backend: Backend) {
    let clamd = tokio::task::spawn_blocking(|| clamd::shared().url()).await.unwrap();
    let app = scanning_app(backend, &clamd, |s| {
        s.scan.scan_outbound = false;
        s.scan.scan_too_large = TooLargePolicy::Release;
    })
    .await;
    let limits = RequestLimits { max_files: 1, max_file_bytes: 1 << 20, max_total_bytes: 1 << 20 };
    let request = make_request(&app, limits).await;
    let uploader = app.browser();
    verify_uploader(&app, &uploader, &request.token).await;
    let large = vec![b'a'; STREAM_MAX * 2];

    leave(&uploader, &request, &[("archive.bin", &large)]).await;
    wait_for_inbound(&app, &request, &["too_large"]).await;
    finish(&uploader, &request).await;

    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender_page(&sender, &request).await;
    assert_eq!(page.texts("[data-scan=too_large]"), ["Not scanned: too large"]);
    assert_eq!(status_of(&sender, &format!("/requests/{}/files/0", request.id)).await, 200);
}

crate::both_backends!(
    an_inbound_file_too_large_for_clamd_is_released_marked_under_the_release_policy,
    a_clean_inbound_file_is_scanned_with_outbound_scanning_off_and_released_to_the_sender,
    an_infected_inbound_file_is_refused_alone_and_the_request_goes_on,
    an_inbound_file_is_held_from_the_sender_while_clamd_is_down_and_released_when_it_is_back,
);
