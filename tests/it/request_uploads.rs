//! A file request's uploader sends files through tus at `/s/{token}/uploads`, as a sender does at
//! `/uploads`: only a session granted this very link stores anything, the request's limits count
//! the unfinished uploads too, the two endpoints never see each other's uploads, a finished
//! upload becomes a file of the request once, and a PATCH cut mid-body resumes.

use std::time::Duration;

use watasu::request::RequestLimits;

use crate::{
    both_backends,
    file_requests::{SENDER, TestRequest, arrived_rows, make_request, roomy, stored_files, upload, verify_uploader},
    lifecycle::quiet_app,
    support::{Backend, Browser, PASSWORD, Page, TestApp, count, eventually},
    uploads::{Tus, durability::cut_patch, pattern, sha256_hex},
};

/// The request's words as a browser without a language preference reads them.
fn words() -> &'static watasu::i18n::RequestText {
    &watasu::i18n::Lang::Ja.text().request
}

/// A tus client on a request's link: `browser` with the CSRF token its page carried.
struct LinkTus {
    tus: Tus,
    token: String,
}

impl LinkTus {
    fn new(browser: Browser, csrf: String, request: &TestRequest) -> Self {
        Self { tus: Tus { browser, csrf }, token: request.token.clone() }
    }

    /// The verified uploader of `request`, in a browser of their own.
    async fn verified(app: &TestApp, request: &TestRequest) -> Self {
        let browser = app.browser();
        let csrf = verify_uploader(app, &browser, &request.token).await.csrf_token();
        Self::new(browser, csrf, request)
    }

    /// POST /s/{token}/uploads for `length` bytes.
    async fn create(&self, length: u64) -> Page {
        let request = self
            .tus
            .request(reqwest::Method::POST, &format!("/s/{}/uploads", self.token))
            .header("Upload-Length", length.to_string())
            .header("Upload-Metadata", "filename c2Nhbi5wZGY=,filetype YXBwbGljYXRpb24vcGRm"); // scan.pdf
        Page::read(request.send().await.unwrap()).await
    }

    /// Creates an upload and answers its path.
    async fn created(&self, length: u64) -> String {
        let page = self.create(length).await;
        assert_eq!(page.status, 201, "{}", page.body);
        let path = page.header("location").unwrap().to_owned();
        assert!(path.starts_with(&format!("/s/{}/uploads/", self.token)), "{path}");
        path
    }

    /// Posts the upload form naming finished uploads by id, as the page's script does.
    async fn attach(&self, paths: &[&str]) -> Page {
        let mut form = reqwest::multipart::Form::new().text("csrf_token", self.tus.csrf.clone());
        for path in paths {
            form = form.text("upload", path.rsplit('/').next().unwrap().to_owned());
        }
        let browser = &self.tus.browser;
        let request = browser
            .client
            .post(browser.url(&format!("/s/{}/upload", self.token)))
            .header("Sec-Fetch-Site", "same-origin");
        Page::read(request.multipart(form).send().await.unwrap()).await
    }
}

async fn upload_rows(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await
}

async fn live_upload_rows(app: &TestApp) -> i64 {
    let sql = watasu::sql!("SELECT count(*) FROM uploads WHERE id > $1 AND expires_at > " now);
    watasu::on_db!(app.db(), |pool| {
        use watasu::db::Dialect;
        sqlx::query_scalar(pool.sql(&sql)).bind(0_i64).fetch_one(pool).await.unwrap()
    })
}

async fn only_a_session_granted_this_link_creates_or_touches_an_upload(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let other = make_request(&app, roomy()).await;

    // A stranger holding the link, with a session and its CSRF token but not the mailbox.
    let stranger = app.browser();
    let code_step = stranger.ask_for_code(&request.token, "someone@example.test").await;
    let stranger = LinkTus::new(stranger, code_step.csrf_token(), &request);
    let refused = stranger.create(10).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.header("tus-resumable"), Some("1.0.0"));
    // The uploader verified on the other link holds a grant, for that link only.
    let elsewhere = LinkTus::verified(&app, &other).await;
    let on_this_link = LinkTus { tus: elsewhere.tus, token: request.token.clone() };
    assert_eq!(on_this_link.create(10).await.status, 403);
    assert_eq!(upload_rows(&app).await, 0, "nothing was created");

    // The uploader's own upload: the others can neither read, write nor end it.
    let uploader = LinkTus::verified(&app, &request).await;
    let path = uploader.created(8).await;
    assert_eq!(stranger.tus.head(&path).await.status, 403);
    assert_eq!(stranger.tus.patch(&path, 0, b"stranger").await.status, 403);
    assert_eq!(stranger.tus.delete(&path).await.status, 403);
    assert_eq!(on_this_link.tus.patch(&path, 0, b"elsewher").await.status, 403);
    let own_path_elsewhere = path.replace(&request.token, &other.token);
    assert_eq!(on_this_link.tus.head(&own_path_elsewhere).await.status, 404, "another request's upload is unknown");
    assert_eq!(uploader.tus.offset(&path).await, 0, "no byte was stored");

    let sent = uploader.tus.patch(&path, 0, b"contract").await;
    assert_eq!(sent.status, 204, "{}", sent.body);
    assert_eq!(uploader.tus.offset(&path).await, 8);
}

async fn the_requests_limits_count_its_unfinished_uploads(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, RequestLimits { max_files: 2, max_file_bytes: 1000, max_total_bytes: 1500 }).await;
    let uploader = LinkTus::verified(&app, &request).await;

    let too_large = uploader.create(1001).await;
    assert_eq!(too_large.status, 413, "{}", too_large.body);
    assert!(too_large.body.contains("1000 bytes"), "the reason names the limit: {}", too_large.body);
    let first = uploader.created(800).await;
    // Nothing of the first arrived yet, and still it holds its 800 bytes.
    let over_total = uploader.create(800).await;
    assert_eq!(over_total.status, 413, "{}", over_total.body);
    assert!(over_total.body.contains("together"), "{}", over_total.body);
    let second = uploader.created(700).await;
    let third = uploader.create(1).await;
    assert_eq!(third.status, 413, "two unfinished uploads are two files: {}", third.body);
    assert!(third.body.contains("at most 2 files"), "{}", third.body);
    // A form-posted file is counted against the same limits.
    let form = upload(&uploader.tus.browser, &request.token, &uploader.tus.csrf, &[("c.txt", b"c")]).await;
    assert_eq!(form.status, 422, "{}", form.body);
    assert_eq!(form.texts("#upload-refused"), [words().refused_too_many]);
    assert_eq!((arrived_rows(&app, &request).await, stored_files(&app)), (0, 0));

    // Ending one gives its room back.
    assert_eq!(uploader.tus.delete(&second).await.status, 204);
    let small = uploader.created(100).await;
    assert_eq!(uploader.tus.patch(&small, 0, &[7; 100]).await.status, 204);
    assert_eq!(uploader.attach(&[&small]).await.status, 303);
    // The arrived file and the first, unfinished, upload: two files.
    assert_eq!(uploader.create(1).await.status, 413);
    assert_eq!(uploader.tus.offset(&first).await, 0);
}

async fn the_senders_endpoint_and_the_uploaders_never_see_each_others_uploads(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = LinkTus::verified(&app, &request).await;
    let theirs = uploader.created(5).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let csrf = sender.get("/shares/new").await.csrf_token();
    let sender = Tus { browser: sender, csrf };
    let own = sender.create(5).await;
    let id = |path: &str| path.rsplit('/').next().unwrap().to_owned();

    // The request's sender, at their own endpoint, does not find the uploader's upload.
    let as_sender = format!("/uploads/{}", id(&theirs));
    assert_eq!(sender.head(&as_sender).await.status, 404);
    assert_eq!(sender.patch(&as_sender, 0, b"sendr").await.status, 404);
    assert_eq!(sender.delete(&as_sender).await.status, 404);
    // Nor does the uploader find the sender's upload under the link.
    let as_uploader = format!("/s/{}/uploads/{}", request.token, id(&own));
    assert_eq!(uploader.tus.head(&as_uploader).await.status, 404);
    assert_eq!(uploader.tus.patch(&as_uploader, 0, b"upldr").await.status, 404);
    assert_eq!(uploader.tus.delete(&as_uploader).await.status, 404);
    // A finished upload of the sender's is no file for the request.
    assert_eq!(sender.patch(&own, 0, b"sendr").await.status, 204);
    let attached = uploader.attach(&[&as_uploader]).await;
    assert_eq!(attached.status, 422, "{}", attached.body);
    assert_eq!(attached.texts("#upload-refused"), [words().refused_upload_unfinished]);
    assert_eq!(arrived_rows(&app, &request).await, 0);
    // And the sender's reservation is the sender's alone: the uploader's upload takes none of it.
    assert_eq!(sender.offset(&own).await, 5);
    assert_eq!(uploader.tus.offset(&theirs).await, 0);
}

async fn a_finished_upload_becomes_a_file_of_the_request_once_and_reaches_the_sender(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = LinkTus::verified(&app, &request).await;
    let content = b"%PDF the signed contract";
    let path = uploader.created(content.len() as u64).await;
    // Half now, half later: it is not a file before it is complete.
    assert_eq!(uploader.tus.patch(&path, 0, &content[..10]).await.status, 204);
    let early = uploader.attach(&[&path]).await;
    assert_eq!(early.status, 422, "{}", early.body);
    assert_eq!(early.texts("#upload-refused"), [words().refused_upload_unfinished]);
    assert_eq!(uploader.tus.patch(&path, 10, &content[10..]).await.status, 204);

    let attached = uploader.attach(&[&path]).await;
    assert_eq!(attached.status, 303, "{}", attached.body);
    assert_eq!(arrived_rows(&app, &request).await, 1);
    assert_eq!(upload_rows(&app).await, 0, "the upload's row went with it");
    assert_eq!(uploader.tus.head(&path).await.status, 404);
    let again = uploader.attach(&[&path]).await;
    assert_eq!(again.status, 422, "an upload becomes a file once: {}", again.body);
    let page = uploader.tus.browser.open_link(&request.token).await;
    assert_eq!(page.texts(".arrived .file-name"), ["scan.pdf"]);
    assert_eq!(page.texts(".arrived .file-sha256"), [sha256_hex(content)]);
    assert_eq!(stored_files(&app), 1);

    // An upload still on its way when the uploader finishes ends with the request.
    let unfinished = uploader.created(100).await;
    assert_eq!(uploader.tus.patch(&unfinished, 0, &[1; 40]).await.status, 204);
    let finished = uploader
        .tus
        .browser
        .post_form(&format!("/s/{}/finish", request.token), &[("csrf_token", &uploader.tus.csrf)])
        .await;
    assert_eq!(finished.status, 303, "{}", finished.body);
    assert_eq!(live_upload_rows(&app).await, 0, "the request's end ends its uploads");
    assert_eq!(uploader.tus.head(&unfinished).await.status, 403, "the link takes nothing now");
    let report = app.state.services.gc.gc().collect(100, watasu::maintenance::Trigger::Cli).await.unwrap();
    assert_eq!(report.uploads, 1, "{report:?}");
    assert_eq!(upload_rows(&app).await, 0);

    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender.get(&format!("/requests/{}", request.id)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.texts(".arrived .file-name"), ["scan.pdf"]);
    let file = sender.client.get(sender.url(&format!("/requests/{}/files/0", request.id))).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), content);
}

async fn a_patch_cut_mid_body_resumes_from_what_arrived(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let request =
        make_request(&app, RequestLimits { max_files: 1, max_file_bytes: 1 << 23, max_total_bytes: 1 << 23 }).await;
    let uploader = LinkTus::verified(&app, &request).await;
    let content = pattern(3 * 1024 * 1024);
    let path = uploader.created(content.len() as u64).await;
    let half = content.len() / 2;
    cut_patch(&app, &uploader.tus, &path, 0, &content, half).await;
    eventually(Duration::from_secs(20), "the cut PATCH's bytes to be recorded", async || {
        uploader.tus.offset(&path).await == half as u64
    })
    .await;
    let rest = uploader.tus.patch(&path, half as u64, &content[half..]).await;
    assert_eq!(rest.status, 204, "{}", rest.body);
    assert_eq!(uploader.attach(&[&path]).await.status, 303);
    let page = uploader.tus.browser.open_link(&request.token).await;
    assert_eq!(page.texts(".arrived .file-sha256"), [sha256_hex(&content)]);
}

async fn a_request_that_expires_unanswered_ends_its_unfinished_uploads(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = LinkTus::verified(&app, &request).await;
    let path = uploader.created(100).await;
    assert_eq!(uploader.tus.patch(&path, 0, &[3; 40]).await.status, 204);

    crate::support::clock::set_ago(app.db(), "shares", &["expires_at"], 1, &format!("id = {}", request.id)).await;
    let gc = async |trigger| app.state.services.gc.gc().collect(100, trigger).await.unwrap();
    assert_eq!(gc(watasu::maintenance::Trigger::Request).await.purged, 1);
    assert_eq!(live_upload_rows(&app).await, 0, "the request's end ended its upload");
    assert_eq!(gc(watasu::maintenance::Trigger::Timer).await.uploads, 1);
    assert_eq!(upload_rows(&app).await, 0);
    assert!(std::fs::read_dir(app.data_dir.path().join("files")).unwrap().next().is_none(), "no byte is left");
}

both_backends!(
    only_a_session_granted_this_link_creates_or_touches_an_upload,
    a_request_that_expires_unanswered_ends_its_unfinished_uploads,
    the_requests_limits_count_its_unfinished_uploads,
    the_senders_endpoint_and_the_uploaders_never_see_each_others_uploads,
    a_finished_upload_becomes_a_file_of_the_request_once_and_reaches_the_sender,
    a_patch_cut_mid_body_resumes_from_what_arrived,
);
