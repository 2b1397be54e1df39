//! The API's file requests through a real HTTP client: asked, paged, read with their state, deleted now,
//! with the scopes each operation needs and another sender's request not found.

use serde_json::json;

use crate::{
    api_handovers::{Api, assert_problem, json_of},
    api_tokens::token_from_page,
    both_backends,
    support::{Backend, TestApp},
};

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

both_backends!(
    a_request_asked_through_the_api_is_read_and_deleted_now,
    each_request_operation_needs_its_scope_and_another_senders_request_is_not_found,
);
