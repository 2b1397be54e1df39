//! The API's file requests through a real HTTP client: asked, paged, read with their state, deleted now,
//! with the scopes each operation needs and another sender's request not found; what arrived
//! downloaded one file (or a range of it) at a time or as the ZIP archive, until it is deleted.

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{
    api_handovers::{Api, assert_problem, json_of},
    api_tokens::token_from_page,
    both_backends,
    file_requests::{SENDER, answered_request},
    lifecycle::quiet_app,
    recipient_bundles::{entries_of, opened_with_python},
    support::{Backend, PASSWORD, Page, TestApp, execute, process::free_local_addr},
};
use watasu::db::Sql;

async fn a_request_asked_through_the_api_is_read_and_deleted_now(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("sato@example.test").await;
    let api = Api::new(&app, &token_from_page(&browser, &["requests:read", "requests:write"]).await);

    let asked =
        api.post("/requests", &json!({ "uploader": "kim@example.test", "message": "The contract", "ttl": "3d" })).await;
    let asked = json_of(&asked, 201);
    assert!(asked["link"].as_str().unwrap().starts_with(&format!("{}/s/", app.base)), "{asked}");
    let id = asked["id"].as_i64().unwrap();

    let request = json_of(&api.get(&format!("/requests/{id}")).await, 200);
    assert_eq!(
        (&request["uploader"], &request["state"], &request["files"]),
        (&json!("kim@example.test"), &json!("open"), &json!([]))
    );
    assert_eq!(request["message"], "The contract");

    let deleted = api.send(reqwest::Method::DELETE, &format!("/requests/{id}"), None).await;
    assert_eq!(json_of(&deleted, 200), json!({ "id": id }));
    // The collection after the response may have cleared it already: ended either way.
    let state = json_of(&api.get(&format!("/requests/{id}")).await, 200)["state"].clone();
    assert!(state == "ended" || state == "purged", "{state}");
    assert_problem(&api.send(reqwest::Method::DELETE, &format!("/requests/{id}"), None).await, 409, "deleted twice");

    let later = json_of(&api.post("/requests", &json!({ "uploader": "lee@example.test" })).await, 201);
    let first = json_of(&api.get("/requests?limit=1").await, 200);
    assert_eq!(first["requests"][0]["id"], later["id"], "{first}");
    let cursor = first["next_cursor"].as_str().expect("a second page");
    let second = json_of(&api.get(&format!("/requests?limit=1&cursor={cursor}")).await, 200);
    assert_eq!(second["requests"][0]["id"], id, "{second}");
    assert!(second.get("next_cursor").is_none(), "{second}");
    assert_problem(&api.get("/requests?cursor=x").await, 400, "a cursor the API never gave");

    let refused = api.post("/requests", &json!({ "uploader": "not an address" })).await;
    assert_problem(&refused, 422, "a bad address");
    assert_problem(
        &api.post("/requests", &json!({ "uploader": "kim@example.test", "max_files": 0 })).await,
        422,
        "no files",
    );
}

async fn each_request_operation_needs_its_scope_and_another_senders_request_is_not_found(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("sato@example.test").await;
    let owner = Api::new(&app, &token_from_page(&browser, &["requests:write"]).await);
    let id = json_of(&owner.post("/requests", &json!({ "uploader": "kim@example.test" })).await, 201)["id"]
        .as_i64()
        .unwrap();
    assert_problem(&owner.get(&format!("/requests/{id}")).await, 403, "a write-only token reading");
    let shares = Api::new(&app, &token_from_page(&browser, &["shares:read", "shares:write"]).await);
    assert_problem(
        &shares.post("/requests", &json!({ "uploader": "kim@example.test" })).await,
        403,
        "a shares token asking",
    );

    let stranger_browser = app.signed_in_sender("kato@example.test").await;
    let stranger = Api::new(&app, &token_from_page(&stranger_browser, &["requests:read", "requests:write"]).await);
    assert_problem(&stranger.get(&format!("/requests/{id}")).await, 404, "another sender's request");
    assert_eq!(json_of(&stranger.get("/requests").await, 200)["requests"], json!([]));
    assert_problem(
        &stranger.send(reqwest::Method::DELETE, &format!("/requests/{id}"), None).await,
        404,
        "deleting another's",
    );
}

async fn what_arrived_downloads_through_the_api_as_the_page_serves_it_until_deleted(backend: Backend) {
    let app = quiet_app(backend).await;
    let files: [(&str, &[u8]); 2] = [("契約書.pdf", b"%PDF contract"), ("scan.png", b"PNG scan")];
    let (request, _uploader) = answered_request(&app, &files).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let api = Api::new(&app, &token_from_page(&sender, &["requests:read", "requests:write"]).await);
    let id = request.id;
    let listed = json_of(&api.get(&format!("/requests/{id}")).await, 200);

    let first = api.request(reqwest::Method::GET, &format!("/requests/{id}/files/0")).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let headers = first.headers().clone();
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["content-length"], "13");
    let disposition = headers["content-disposition"].to_str().unwrap();
    assert!(disposition.ends_with("filename*=UTF-8''%E5%A5%91%E7%B4%84%E6%9B%B8.pdf"), "{disposition}");
    let bytes = first.bytes().await.unwrap();
    assert_eq!(hex::encode(Sha256::digest(&bytes)), listed["files"][0]["sha256"].as_str().unwrap());
    assert_eq!(bytes.as_ref(), files[0].1);

    let part = api
        .request(reqwest::Method::GET, &format!("/requests/{id}/files/1"))
        .header("Range", "bytes=4-7")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 4-7/8");
    assert_eq!(part.bytes().await.unwrap().as_ref(), b"scan");

    let zip = api.request(reqwest::Method::GET, &format!("/requests/{id}/zip")).send().await.unwrap();
    assert_eq!(zip.status(), 200);
    assert_eq!(zip.headers()["content-type"], "application/zip");
    assert_eq!(opened_with_python(&zip.bytes().await.unwrap()), entries_of(&files));
    assert_problem(&api.get(&format!("/requests/{id}/files/2")).await, 404, "no file at that position");

    let deleted = api.send(reqwest::Method::DELETE, &format!("/requests/{id}"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await.unwrap().unwrap();
    assert_problem(&api.get(&format!("/requests/{id}/files/0")).await, 410, "a file deleted now");
    assert_problem(&api.get(&format!("/requests/{id}/zip")).await, 410, "the archive deleted now");
}

async fn only_the_requesting_sender_with_requests_read_downloads_what_arrived(backend: Backend) {
    let app = quiet_app(backend).await;
    let (request, _uploader) = answered_request(&app, &[("scan.png", b"PNG scan")]).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let id = request.id;
    let writer = Api::new(&app, &token_from_page(&sender, &["requests:write"]).await);
    let stranger = app.signed_in_sender("kato@example.test").await;
    let stranger = Api::new(&app, &token_from_page(&stranger, &["requests:read", "requests:write"]).await);
    for path in [format!("/requests/{id}/files/0"), format!("/requests/{id}/zip")] {
        let refused: Page = writer.get(&path).await;
        assert_problem(&refused, 403, &format!("{path} without requests:read"));
        assert_problem(&stranger.get(&path).await, 404, &format!("{path} of another sender's request"));
        assert!(!stranger.get(&path).await.body.contains("PNG scan"));
    }

    let open = json_of(&writer.post("/requests", &json!({ "uploader": "kim@example.test" })).await, 201);
    let reader = Api::new(&app, &token_from_page(&sender, &["requests:read"]).await);
    let open = open["id"].as_i64().unwrap();
    assert_problem(&reader.get(&format!("/requests/{open}/zip")).await, 409, "nothing arrived yet");
}

async fn a_file_the_scan_holds_is_409_and_one_it_refused_is_410_before_its_bytes_go(backend: Backend) {
    // Nothing listens where clamd should be: the file stays held, waiting for a verdict.
    let clamd = format!("tcp://{}", free_local_addr());
    let app = crate::scan::scanning_app(backend, &clamd, |s| s.scan.scan_outbound = false).await;
    let (request, _uploader) = answered_request(&app, &[("contract.pdf", b"%PDF signed contract")]).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let api = Api::new(&app, &token_from_page(&sender, &["requests:read"]).await);
    let (one, zip) = (format!("/requests/{}/files/0", request.id), format!("/requests/{}/zip", request.id));

    let held = assert_problem(&api.get(&one).await, 409, "a file waiting for the scan's verdict");
    assert!(held["detail"].as_str().unwrap().contains("virus scan"), "{held}");
    assert_problem(&api.get(&zip).await, 409, "an archive of files waiting for the verdict");

    // The verdict is written before the refused file's bytes are deleted (and stays while a
    // failed delete is retried): from then on the file is gone, never "held until clean".
    let refused = Sql::same("UPDATE files SET scan_state = 'infected', scan_finding = 'Eicar' WHERE $1 = $1");
    assert_eq!(execute(app.db(), refused, 0).await, 1);
    assert_problem(&api.get(&one).await, 410, "a file the scan refused");
    assert_problem(&api.get(&zip).await, 410, "an archive whose only file the scan refused");
}

both_backends!(
    a_file_the_scan_holds_is_409_and_one_it_refused_is_410_before_its_bytes_go,
    what_arrived_downloads_through_the_api_as_the_page_serves_it_until_deleted,
    only_the_requesting_sender_with_requests_read_downloads_what_arrived,
    a_request_asked_through_the_api_is_read_and_deleted_now,
    each_request_operation_needs_its_scope_and_another_senders_request_is_not_found,
);
