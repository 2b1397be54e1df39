//! The API's handovers through a real HTTP client: made of a tus upload sent with the token for two
//! recipients, paged with a cursor, read with each share's timeline and the file's digest, ended;
//! the scopes each operation needs; and every refusal answered as RFC 9457 problem details. Small
//! files in a multipart body instead, and such a body refused with nothing kept.

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use watasu::share::create::MAX_RECIPIENTS;

use crate::{
    api_tokens::token_from_page,
    both_backends,
    support::{Backend, Page, TestApp},
    uploads::id_of,
};

const SENDER: &str = "sato@example.test";

/// A bearer client of the API.
pub(crate) struct Api {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    pub(crate) fn new(app: &TestApp, token: &str) -> Self {
        Self { client: reqwest::Client::new(), base: format!("{}/api/v1", app.base), token: token.to_owned() }
    }

    /// A request to `path` with the token, to finish as the test needs.
    pub(crate) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token)
    }

    pub(crate) async fn send(&self, method: reqwest::Method, path: &str, body: Option<&str>) -> Page {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.header("Content-Type", "application/json").body(body.to_owned());
        }
        Page::read(request.send().await.unwrap()).await
    }

    pub(crate) async fn get(&self, path: &str) -> Page {
        self.send(reqwest::Method::GET, path, None).await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> Page {
        self.send(reqwest::Method::POST, path, Some(&body.to_string())).await
    }
}

pub(crate) fn json_of(page: &Page, status: u16) -> Value {
    assert_eq!(page.status, status, "{}", page.body);
    serde_json::from_str(&page.body).unwrap()
}

/// Asserts `page` is the problem document of `status`.
pub(crate) fn assert_problem(page: &Page, status: u16, what: &str) -> Value {
    assert_eq!(page.status, status, "{what}: {}", page.body);
    assert_eq!(page.header("content-type"), Some("application/problem+json"), "{what}: {:?}", page.headers);
    let problem: Value = serde_json::from_str(&page.body).unwrap();
    assert_eq!(problem["status"], status, "{what}: {problem}");
    for field in ["type", "title", "detail"] {
        assert!(problem[field].is_string(), "{what}: no {field} in {problem}");
    }
    problem
}

/// Sends `content` through the tus endpoint with the bearer token alone (no cookie, no CSRF
/// token); answers the upload's id.
async fn bearer_upload(app: &TestApp, token: &str, content: &[u8]) -> Page {
    let client = reqwest::Client::new();
    let tus = |method, path: &str| {
        client.request(method, format!("{}{path}", app.base)).bearer_auth(token).header("Tus-Resumable", "1.0.0")
    };
    let metadata = format!("filename {}", base64::engine::general_purpose::STANDARD.encode("report.txt"));
    let created = tus(reqwest::Method::POST, "/uploads")
        .header("Upload-Length", content.len().to_string())
        .header("Upload-Metadata", metadata)
        .send()
        .await
        .unwrap();
    let created = Page::read(created).await;
    let Some(path) = created.header("location").map(str::to_owned) else { return created };
    let patched = tus(reqwest::Method::PATCH, &path)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .body(content.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    Page { body: id_of(&path).to_owned(), ..created }
}

async fn a_handover_made_through_the_api_is_paged_read_and_ended(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&browser, &["shares:read", "shares:write"]).await;
    let api = Api::new(&app, &token);
    let content = b"quarterly figures\n".repeat(100);
    let upload = bearer_upload(&app, &token, &content).await;
    assert_eq!(upload.status, 201, "{}", upload.body);
    let reader = token_from_page(&browser, &["shares:read"]).await;
    assert_eq!(bearer_upload(&app, &reader, b"x").await.status, 403, "a read-only token uploading");
    assert_eq!(bearer_upload(&app, "wts_nothing", b"x").await.status, 401, "a wrong token uploading");

    let made = api
        .post(
            "/handovers",
            &json!({ "recipients": ["kim@example.test", "lee@example.test"], "upload_ids": [upload.body],
                     "ttl": "2d", "message": "The figures", "lang": "ja" }),
        )
        .await;
    let made = json_of(&made, 201);
    let shares = made["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 2, "{made}");
    assert!(shares.iter().all(|s| s["link"].as_str().unwrap().starts_with(&format!("{}/s/", app.base))), "{made}");

    let first = json_of(&api.get("/handovers?limit=1").await, 200);
    assert_eq!(first["shares"].as_array().unwrap().len(), 1, "{first}");
    let cursor = first["next_cursor"].as_str().expect("a second page");
    let second = json_of(&api.get(&format!("/handovers?limit=1&cursor={cursor}")).await, 200);
    assert_eq!(second["shares"].as_array().unwrap().len(), 1, "{second}");
    assert!(second.get("next_cursor").is_none(), "{second}");
    assert_ne!(first["shares"][0]["id"], second["shares"][0]["id"]);

    let id = shares[0]["id"].as_i64().unwrap();
    let handover = json_of(&api.get(&format!("/handovers/{id}")).await, 200);
    let sha256 = hex::encode(Sha256::digest(&content));
    assert_eq!(handover["files"], json!([{ "name": "report.txt", "size_bytes": content.len(), "sha256": sha256 }]));
    let outcomes: Vec<&str> =
        handover["shares"].as_array().unwrap().iter().map(|s| s["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["waiting", "waiting"], "{handover}");
    assert_eq!(handover["shares"][0]["events"], json!([]), "{handover}");

    let ended = json_of(&api.post(&format!("/handovers/{id}/end"), &json!({})).await, 200);
    assert_eq!(ended, json!({ "ended": 2 }));
    assert_problem(&api.post(&format!("/handovers/{id}/end"), &json!({})).await, 409, "ended twice");
    assert_problem(&api.post(&format!("/shares/{id}/end"), &json!({})).await, 409, "a share ended twice");
    let after = json_of(&api.get(&format!("/handovers/{id}")).await, 200);
    for share in after["shares"].as_array().unwrap() {
        assert_eq!(share["outcome"], "revoked", "{after}");
        // The GC may have purged the file meanwhile: the revoke is on the timeline either way.
        assert!(share["events"].as_array().unwrap().iter().any(|e| e["kind"] == "revoked"), "{after}");
    }
}

async fn each_operation_needs_its_scope_and_another_senders_handover_is_not_found(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let owner = Api::new(&app, &token_from_page(&browser, &["shares:write", "shares:read"]).await);
    let made = json_of(
        &owner.post("/handovers", &json!({ "recipients": ["kim@example.test"], "note": "door code 4711" })).await,
        201,
    );
    let id = made["shares"][0]["id"].as_i64().unwrap();

    let reader = Api::new(&app, &token_from_page(&browser, &["shares:read"]).await);
    let refused = reader.post("/handovers", &json!({ "recipients": ["kim@example.test"], "note": "x" })).await;
    assert_problem(&refused, 403, "a read-only token writing");
    assert!(refused.header("www-authenticate").unwrap().contains(r#"scope="shares:write""#), "{:?}", refused.headers);
    assert_problem(&reader.post(&format!("/handovers/{id}/end"), &json!({})).await, 403, "a read-only token ending");
    assert_eq!(reader.get(&format!("/handovers/{id}")).await.status, 200);
    let requests_only = Api::new(&app, &token_from_page(&browser, &["requests:read"]).await);
    assert_problem(&requests_only.get("/handovers").await, 403, "a requests token listing shares");

    let stranger = Api::new(
        &app,
        &token_from_page(&app.signed_in_sender("kato@example.test").await, &["shares:read", "shares:write"]).await,
    );
    assert_problem(&stranger.get(&format!("/handovers/{id}")).await, 404, "another sender's handover");
    assert_problem(&stranger.post(&format!("/shares/{id}/end"), &json!({})).await, 404, "another sender's share");
    assert_eq!(json_of(&stranger.get("/handovers").await, 200)["shares"], json!([]));
    assert_eq!(json_of(&owner.get(&format!("/handovers/{id}")).await, 200)["shares"][0]["outcome"], "waiting");
}

async fn every_refusal_is_a_problem_document_and_bad_input_is_never_a_server_error(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let api =
        Api::new(&app, &token_from_page(&app.signed_in_sender(SENDER).await, &["shares:read", "shares:write"]).await);

    let anonymous = Api { token: "wts_nothing".into(), ..Api::new(&app, "") };
    let refused = assert_problem(&anonymous.get("/handovers").await, 401, "a wrong token");
    assert_eq!(refused["title"], "Unauthorized");
    let no_header = Page::read(reqwest::get(format!("{}/api/v1/handovers", app.base)).await.unwrap()).await;
    assert_problem(&no_header, 401, "no token");
    assert!(no_header.header("www-authenticate").unwrap().starts_with("Bearer"), "{:?}", no_header.headers);

    let broken = api.send(reqwest::Method::POST, "/handovers", Some("{not json")).await;
    assert_problem(&broken, 400, "broken JSON");
    assert_problem(&api.post("/handovers", &json!({ "recipients": "kim" })).await, 400, "a wrong type");
    let bad_address = api.post("/handovers", &json!({ "recipients": ["not an address"], "note": "x" })).await;
    assert_problem(&bad_address, 422, "a bad address");
    let nothing = api.post("/handovers", &json!({ "recipients": ["kim@example.test"] })).await;
    assert_problem(&nothing, 422, "neither files nor a note");
    let foreign = api.post("/handovers", &json!({ "recipients": ["kim@example.test"], "upload_ids": ["nope"] })).await;
    assert_problem(&foreign, 422, "an upload that is not the sender's");
    let too_long =
        api.post("/handovers", &json!({ "recipients": ["kim@example.test"], "note": "x", "ttl": "999d" })).await;
    assert_problem(&too_long, 422, "a ttl past the limit");
    assert_problem(&api.get("/handovers?cursor=%21%21").await, 400, "a cursor the API never gave");
    assert_problem(&api.get("/handovers?limit=0").await, 400, "a limit below 1");
    assert_problem(&api.get("/handovers/abc").await, 400, "an id that is no number");
    assert_problem(&api.get("/handovers/999999").await, 404, "an unknown handover");
    assert_problem(&api.get("/nowhere").await, 404, "an unknown path");
}

/// A multipart body of a new handover: `fields`, then a `file` part per (name, content).
fn form_of(fields: &[(&str, &str)], files: &[(&str, Vec<u8>)]) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    for (name, content) in files {
        form = form.part("file", reqwest::multipart::Part::bytes(content.clone()).file_name(name.to_string()));
    }
    form
}

async fn post_form(api: &Api, form: reqwest::multipart::Form) -> Page {
    Page::read(api.request(reqwest::Method::POST, "/handovers").multipart(form).send().await.unwrap()).await
}

/// Rows of kept files and uploads, and files in the store: none once a form is refused.
async fn kept(app: &TestApp) -> (i64, i64, usize) {
    let files = crate::support::count(app.db(), "SELECT count(*) FROM files WHERE id >= $1", 0).await;
    let uploads = crate::support::count(app.db(), "SELECT count(*) FROM uploads WHERE id >= $1", 0).await;
    (files, uploads, crate::file_requests::stored_files(app))
}

async fn small_files_in_a_multipart_body_are_handed_to_each_recipient(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let api = Api::new(&app, &token_from_page(&browser, &["shares:read", "shares:write"]).await);
    let files = [("見積書.pdf", b"%PDF estimate".to_vec()), ("notes.txt", b"two lines\nof notes\n".to_vec())];

    let fields = [
        ("recipients", "kim@example.test"),
        ("recipients", "lee@example.test"),
        ("message", "The estimate"),
        ("ttl", "2d"),
        ("lang", "ja"),
        ("allow_reply", "true"),
    ];
    let made = json_of(&post_form(&api, form_of(&fields, &files)).await, 201);
    let shares = made["shares"].as_array().unwrap();
    let recipients: Vec<&str> = shares.iter().map(|s| s["recipient"].as_str().unwrap()).collect();
    assert_eq!(recipients, ["kim@example.test", "lee@example.test"], "{made}");

    let id = shares[0]["id"].as_i64().unwrap();
    let handover = json_of(&api.get(&format!("/handovers/{id}")).await, 200);
    let expected: Vec<Value> = files
        .iter()
        .map(|(name, content)| {
            json!({ "name": name, "size_bytes": content.len(), "sha256": hex::encode(Sha256::digest(content)) })
        })
        .collect();
    assert_eq!(handover["files"], json!(expected));
    assert_eq!(handover["shares"].as_array().unwrap().len(), 2, "{handover}");
}

async fn a_multipart_body_over_the_limit_or_without_a_recipient_keeps_nothing(backend: Backend) {
    const LIMIT: u64 = 64 * 1024;
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = LIMIT).await;
    let browser = app.signed_in_sender(SENDER).await;
    let api = Api::new(&app, &token_from_page(&browser, &["shares:read", "shares:write"]).await);
    let half_and_more = vec![b'x'; LIMIT as usize / 2 + 1024];
    let files = [("a.bin", half_and_more.clone()), ("b.bin", half_and_more)];

    let over = post_form(&api, form_of(&[("recipients", "kim@example.test")], &files)).await;
    assert_problem(&over, 413, "two files over the limit together");
    assert_eq!(kept(&app).await, (0, 0, 0), "nothing of the refused body is kept");

    // The values are checked before a file is kept: no 413 for files that never count.
    let nobody = post_form(&api, form_of(&[("message", "for whom?")], &files)).await;
    assert_problem(&nobody, 422, "no recipient");
    assert_eq!(kept(&app).await, (0, 0, 0), "nothing of the refused body is kept");

    let bad = post_form(&api, form_of(&[("recipients", "not an address")], &files[..1])).await;
    assert_problem(&bad, 422, "a bad address");
    let crowd: Vec<String> = (0..=MAX_RECIPIENTS).map(|n| format!("r{n}@example.test")).collect();
    let crowd: Vec<(&str, &str)> = crowd.iter().map(|to| ("recipients", to.as_str())).collect();
    let crowded = assert_problem(&post_form(&api, form_of(&crowd, &files[..1])).await, 422, "a recipient too many");
    assert!(crowded["detail"].as_str().unwrap().starts_with("recipients: "), "{crowded}");
    let late = form_of(&[], &files[..1]).text("recipients", "kim@example.test");
    assert_problem(&post_form(&api, late).await, 422, "a field after the files");
    assert_eq!(kept(&app).await, (0, 0, 0), "nothing of the refused bodies is kept");

    // A body that ends inside its file is the client's doing: 400, not a server error.
    let cut_off = "--cut\r\nContent-Disposition: form-data; name=\"recipients\"\r\n\r\nkim@example.test\r\n\
                   --cut\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\nthe first bytes";
    let request =
        api.request(reqwest::Method::POST, "/handovers").header("Content-Type", "multipart/form-data; boundary=cut");
    let cut_off = Page::read(request.body(cut_off).send().await.unwrap()).await;
    assert_problem(&cut_off, 400, "a body cut off inside its file");
    assert_eq!(kept(&app).await, (0, 0, 0), "nothing of the cut-off body is kept");
    assert_eq!(json_of(&api.get("/handovers").await, 200)["shares"], json!([]));
}

both_backends!(
    small_files_in_a_multipart_body_are_handed_to_each_recipient,
    a_multipart_body_over_the_limit_or_without_a_recipient_keeps_nothing,
    a_handover_made_through_the_api_is_paged_read_and_ended,
    each_operation_needs_its_scope_and_another_senders_handover_is_not_found,
    every_refusal_is_a_problem_document_and_bad_input_is_never_a_server_error,
);
