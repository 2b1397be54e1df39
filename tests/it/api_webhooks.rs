//! The API's webhook endpoints through a real HTTP client, against the receiver that checks
//! signatures with its own implementation of the spec: registered with a `whsec_…` secret shown
//! once, a test event arriving signed with it, listed, read with the delivery log, rotated (two
//! signatures during the overlap), deleted; a private address, team reach for a sender, a token
//! without the scope and another person's endpoint all refused.

use serde_json::{Value, json};

use crate::{
    api_handovers::{Api, assert_problem, json_of},
    api_tokens::token_from_page,
    both_backends,
    support::{Backend, PASSWORD, Page, TestApp, count},
    webhooks::{app_allowing_loopback, receiver::Receiver, settle},
};

const BOTH_SCOPES: [&str; 2] = ["webhooks:read", "webhooks:write"];

/// Endpoints stored, whoever's.
async fn endpoints_stored(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM webhook_endpoints WHERE id > $1", 0).await
}

/// The secret of an answer that shows one, after checking no cache may keep it.
fn secret_of(answer: &Value, page: &Page) -> String {
    assert_eq!(page.header("cache-control"), Some("no-store"), "{:?}", page.headers);
    let secret = answer["secret"].as_str().expect("the answer shows the secret").to_owned();
    assert!(secret.starts_with("whsec_") && secret.len() > 40, "{secret}");
    secret
}

/// Asks for a test event and answers the request that reached the receiver for it.
async fn test_event(app: &TestApp, api: &Api, receiver: &Receiver, id: i64) -> crate::webhooks::receiver::Received {
    let before = receiver.received().len();
    assert_eq!(json_of(&api.post(&format!("/webhooks/{id}/test"), &json!({})).await, 202), json!({ "id": id }));
    settle(app).await;
    let received = receiver.received();
    assert_eq!(received.len(), before + 1, "{received:#?}");
    let test = received.last().unwrap().clone();
    assert_eq!(test.body["type"], "webhook.test");
    test
}

async fn an_endpoint_registered_through_the_api_is_signed_for_listed_read_rotated_and_deleted(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(0).await;
    let browser = app.signed_in_sender("sato@example.test").await;
    let api = Api::new(&app, &token_from_page(&browser, &BOTH_SCOPES).await);

    let registered = api.post("/webhooks", &json!({ "url": receiver.url(), "event_types": ["share.opened"] })).await;
    let created = json_of(&registered, 201);
    let secret = secret_of(&created, &registered);
    let id = created["id"].as_i64().unwrap();
    assert_eq!(
        (&created["url"], &created["event_types"], &created["reach"], &created["enabled"]),
        (&json!(receiver.url()), &json!(["share.opened"]), &json!("own"), &json!(true))
    );

    receiver.accept(&[&secret]);
    let test = test_event(&app, &api, &receiver, id).await;
    assert_eq!((test.signatures, &test.verified, test.fresh), (1, &vec![secret.clone()], true));

    let listed = api.get("/webhooks").await;
    assert!(!listed.body.contains(&secret[6..]), "the secret is shown again: {}", listed.body);
    let listed = json_of(&listed, 200);
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1, "{listed}");
    let webhook = &listed["webhooks"][0];
    assert_eq!((&webhook["id"], &webhook["url"]), (&json!(id), &json!(receiver.url())));
    assert!(webhook.get("secret").is_none(), "{webhook}");
    assert_eq!(webhook["last_delivery"]["status"], "delivered", "{webhook}");
    assert!(chrono::DateTime::parse_from_rfc3339(webhook["created_at"].as_str().unwrap()).is_ok());

    let read = api.get(&format!("/webhooks/{id}")).await;
    assert!(!read.body.contains(&secret[6..]), "the secret is shown again: {}", read.body);
    let read = json_of(&read, 200);
    let delivery = &read["deliveries"][0];
    assert_eq!(read["deliveries"].as_array().unwrap().len(), 1, "{read}");
    assert_eq!(
        (&delivery["message_id"], &delivery["event_type"], &delivery["status"]),
        (&json!(test.id), &json!("webhook.test"), &json!("delivered"))
    );
    assert_eq!((&delivery["attempts"], &delivery["last_status"]), (&json!(0), &json!(200)), "{delivery}");
    assert!(delivery["delivered_at"].is_string() && delivery.get("last_error").is_none(), "{delivery}");

    // Rotation: a new secret once; during the overlap each message carries both signatures.
    let rotation = api.post(&format!("/webhooks/{id}/rotate"), &json!({})).await;
    let rotated = json_of(&rotation, 200);
    let new_secret = secret_of(&rotated, &rotation);
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["previous_signs_for_seconds"], 24 * 3600);
    receiver.accept(&[&secret, &new_secret]);
    let test = test_event(&app, &api, &receiver, id).await;
    assert_eq!(test.signatures, 2);
    assert_eq!(test.verified, [secret.clone(), new_secret.clone()], "both signatures verify");

    // Pages, newest first.
    let second = api.post("/webhooks", &json!({ "url": receiver.url(), "event_types": ["file.refused"] })).await;
    let second = json_of(&second, 201)["id"].as_i64().unwrap();
    let first_page = json_of(&api.get("/webhooks?limit=1").await, 200);
    assert_eq!(first_page["webhooks"][0]["id"], second, "{first_page}");
    let cursor = first_page["next_cursor"].as_str().expect("a second page");
    let second_page = json_of(&api.get(&format!("/webhooks?limit=1&cursor={cursor}")).await, 200);
    assert_eq!(second_page["webhooks"][0]["id"], id, "{second_page}");
    assert!(second_page.get("next_cursor").is_none(), "{second_page}");

    let deleted = api.send(reqwest::Method::DELETE, &format!("/webhooks/{id}"), None).await;
    assert_eq!(json_of(&deleted, 200), json!({ "id": id }));
    assert_problem(&api.get(&format!("/webhooks/{id}")).await, 404, "a deleted endpoint");
    assert_problem(&api.send(reqwest::Method::DELETE, &format!("/webhooks/{id}"), None).await, 404, "deleted twice");
    let left = json_of(&api.get("/webhooks").await, 200);
    assert_eq!(left["webhooks"].as_array().unwrap().len(), 1, "{left}");
    assert_eq!(endpoints_stored(&app).await, 1);
}

async fn private_addresses_team_reach_missing_scopes_and_others_endpoints_are_refused(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(0).await;
    let browser = app.signed_in_sender("sato@example.test").await;
    let offered = browser.get("/account").await.attrs("input[name=scope]", "value");
    assert!(BOTH_SCOPES.iter().all(|scope| offered.iter().any(|o| o == scope)), "the token form offers {offered:?}");
    let sender = Api::new(&app, &token_from_page(&browser, &BOTH_SCOPES).await);

    for (url, reason) in [
        ("https://10.0.0.1/hook", "url: the address 10.0.0.1 is private, loopback or link-local"),
        ("https://169.254.169.254/latest/meta-data", "url: the address 169.254.169.254 is private"),
        ("ftp://hooks.example.test/", "url: the address must start with https://"),
        ("https://hooks.example.test:0/hook", "url: the address names port 0"),
        ("https://[2002:a00:1::1]/hook", "url: the address 2002:a00:1::1 is private"),
        ("not an address", "url: not a web address"),
    ] {
        let refused = sender.post("/webhooks", &json!({ "url": url, "event_types": ["share.opened"] })).await;
        let problem = assert_problem(&refused, 422, url);
        assert!(problem["detail"].as_str().unwrap().starts_with(reason), "{url}: {problem}");
    }
    for event_types in [json!([]), json!(["share.opened", "share.teleported"]), json!(["webhook.test"])] {
        let refused = sender.post("/webhooks", &json!({ "url": receiver.url(), "event_types": event_types })).await;
        assert_problem(&refused, 422, &event_types.to_string());
    }
    let team = json!({ "url": receiver.url(), "event_types": ["share.opened"], "reach": "team" });
    assert_problem(&sender.post("/webhooks", &team).await, 403, "a sender asking for team reach");
    assert_eq!(endpoints_stored(&app).await, 0, "a refused endpoint was stored");

    let read_only = Api::new(&app, &token_from_page(&browser, &["webhooks:read"]).await);
    let own = json!({ "url": receiver.url(), "event_types": ["share.opened"] });
    assert_problem(&read_only.post("/webhooks", &own).await, 403, "a read-only token registering");
    let shares = Api::new(&app, &token_from_page(&browser, &["shares:read", "shares:write"]).await);
    assert_problem(&shares.get("/webhooks").await, 403, "a shares token listing");
    let own_id = json_of(&sender.post("/webhooks", &own).await, 201)["id"].as_i64().unwrap();
    assert_problem(&read_only.post(&format!("/webhooks/{own_id}/rotate"), &json!({})).await, 403, "read-only rotating");
    assert_problem(&shares.get(&format!("/webhooks/{own_id}")).await, 403, "a shares token reading");

    // An admin's team endpoint: theirs alone, and to anyone else as if it did not exist.
    app.create_admin("admin@example.test").await;
    let admin_browser = app.sign_in("admin@example.test", PASSWORD).await;
    let admin = Api::new(&app, &token_from_page(&admin_browser, &BOTH_SCOPES).await);
    let admins = json_of(&admin.post("/webhooks", &team).await, 201);
    assert_eq!(admins["reach"], "team", "{admins}");
    let team_id = admins["id"].as_i64().unwrap();
    let listed = json_of(&admin.get("/webhooks").await, 200);
    assert_eq!(listed["webhooks"][0]["reach"], "team", "{listed}");

    let stranger_browser = app.signed_in_sender("kato@example.test").await;
    let stranger = Api::new(&app, &token_from_page(&stranger_browser, &BOTH_SCOPES).await);
    for (other, whose) in [(&sender, "the admin's team endpoint"), (&stranger, "another sender's endpoint")] {
        let id = if whose.starts_with("the admin") { team_id } else { own_id };
        assert_problem(&other.get(&format!("/webhooks/{id}")).await, 404, whose);
        assert_problem(&other.post(&format!("/webhooks/{id}/rotate"), &json!({})).await, 404, whose);
        assert_problem(&other.post(&format!("/webhooks/{id}/test"), &json!({})).await, 404, whose);
        assert_problem(&other.send(reqwest::Method::DELETE, &format!("/webhooks/{id}"), None).await, 404, whose);
    }
    let ids = |page: &Value| page["webhooks"].as_array().unwrap().iter().map(|w| w["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&json_of(&sender.get("/webhooks").await, 200)), [json!(own_id)]);
    assert_eq!(ids(&json_of(&stranger.get("/webhooks").await, 200)), Vec::<Value>::new());
    assert_eq!(endpoints_stored(&app).await, 2, "nothing was deleted by someone else");
}

both_backends!(
    an_endpoint_registered_through_the_api_is_signed_for_listed_read_rotated_and_deleted,
    private_addresses_team_reach_missing_scopes_and_others_endpoints_are_refused
);
