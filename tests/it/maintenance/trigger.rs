//! The authenticated HTTP trigger: 202 with a location, Idempotency-Key, one run under concurrency, 401.

use super::*;
use crate::support::Backend;

async fn the_trigger_answers_202_with_a_location_and_runs_in_the_background(backend: Backend) {
    let app = quiet_app(backend).await;
    let expired = insert_sessions(app.db(), 3, SessionAge::Expired).await;
    let response = post_trigger(&app, Some(TOKEN), Some("ping-2026-11-30T02:00")).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/maintenance/runs/"), "{location}");
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["run"]["trigger"], "http");
    assert_eq!(body["run"]["kind"], "all");

    let done = finished_run(&app, &location).await;
    assert_eq!(done["run"]["state"], "succeeded", "{done}");
    assert_eq!(done["run"]["deleted"], 3);
    assert!(done["items"].as_array().unwrap().iter().any(|i| i["target_kind"] == "session" && i["count"] == 3));
    for id in expired {
        assert!(!session_exists(app.db(), id).await);
    }

    // Another trigger at once: too soon.
    let again = post_trigger(&app, Some(TOKEN), Some("another-key")).await;
    assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = again.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(http_runs(&app).await, 1);

    // Bad requests change nothing.
    let bad_kind = reqwest::Client::new()
        .post(format!("{}/maintenance/runs?kind=users", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_kind.status(), StatusCode::BAD_REQUEST);
    let bad_key = post_trigger(&app, Some(TOKEN), Some(&"k".repeat(300))).await;
    assert_eq!(bad_key.status(), StatusCode::BAD_REQUEST);
    let unknown = reqwest::Client::new()
        .get(format!("{}/maintenance/runs/999999", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(http_runs(&app).await, 1);
}

async fn the_same_idempotency_key_twice_gives_one_run(backend: Backend) {
    let app = quiet_app(backend).await;
    let first = post_trigger(&app, Some(TOKEN), Some("nightly-2026-11-30")).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let location = first.headers()["location"].to_str().unwrap().to_owned();
    finished_run(&app, &location).await;
    let second = post_trigger(&app, Some(TOKEN), Some("nightly-2026-11-30")).await;
    assert_eq!(second.status(), StatusCode::ACCEPTED, "a replay, not 429");
    assert_eq!(second.headers()["location"].to_str().unwrap(), location);
    let body: serde_json::Value = serde_json::from_str(&second.text().await.unwrap()).unwrap();
    assert_eq!(body["run"]["state"], "succeeded", "the replay shows the same run, finished");
    assert_eq!(http_runs(&app).await, 1);
    // The key is kept only as a hash.
    assert_eq!(
        count(
            app.db(),
            "SELECT count(*) FROM maintenance_runs WHERE idempotency_key_hash LIKE '%nightly%' AND id > $1",
            0
        )
        .await,
        0
    );
}

async fn concurrent_triggers_make_one_run(backend: Backend) {
    let app = quiet_app(backend).await;
    let client = reqwest::Client::new();
    let base = app.base.clone();
    // Sixteen pingers at once, half with one shared key, half with keys of their own.
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (client, base) = (client.clone(), base.clone());
            let key = if i % 2 == 0 { "shared-key".to_owned() } else { format!("own-key-{i}") };
            tokio::spawn(async move {
                let response = client
                    .post(format!("{base}/maintenance/runs"))
                    .bearer_auth(TOKEN)
                    .header("Idempotency-Key", key)
                    .send()
                    .await
                    .unwrap();
                (response.status(), response.headers().get("location").map(|l| l.to_str().unwrap().to_owned()))
            })
        })
        .collect();
    let mut locations = HashSet::new();
    for task in tasks {
        let (status, location) = task.await.unwrap();
        match status {
            StatusCode::ACCEPTED => {
                locations.insert(location.unwrap());
            }
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(locations.len(), 1, "every accepted trigger names the same run: {locations:?}");
    assert_eq!(http_runs(&app).await, 1);
}

async fn a_wrong_or_missing_token_gets_401_and_creates_nothing(backend: Backend) {
    let app = quiet_app(backend).await;
    let before = count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE id > $1", 0).await;
    let wrong = format!("{TOKEN}x");
    for token in [None, Some("wrong"), Some(wrong.as_str()), Some(""), Some(&TOKEN[..TOKEN.len() - 1])] {
        let response = post_trigger(&app, token, Some("k")).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    let basic = reqwest::Client::new()
        .post(format!("{}/maintenance/runs", app.base))
        .header("Authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
    let read = reqwest::Client::new()
        .get(format!("{}/maintenance/runs/1", app.base))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE id > $1", 0).await, before);
    assert_eq!(count(app.db(), "SELECT count(*) FROM maintenance_leases WHERE length(name) > $1", 0).await, 0);
}

async fn without_a_configured_token_the_trigger_does_not_exist(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| s.maintenance_interval = Duration::from_secs(24 * 3600)).await;
    let response = post_trigger(&app, Some(TOKEN), None).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(http_runs(&app).await, 0);
}

both_backends!(
    the_trigger_answers_202_with_a_location_and_runs_in_the_background,
    the_same_idempotency_key_twice_gives_one_run,
    concurrent_triggers_make_one_run,
    a_wrong_or_missing_token_gets_401_and_creates_nothing,
    without_a_configured_token_the_trigger_does_not_exist
);
