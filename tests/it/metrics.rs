//! `GET /metrics`: absent without a token, refused without the right bearer, and after a real
//! share's whole life (created, verified, downloaded, collected) a scrape that counts it by route
//! pattern and state, and names none of its secrets.

use std::time::{Duration, Instant};

use watasu::{
    maintenance::Trigger,
    secret::SecretString,
    services::sharing::{Actor, Change},
};

use crate::both_backends;
use crate::support::{
    Backend, Browser, Page, RECIPIENT, TestApp, clock, count, eventually, installation::Installation,
    process::run_watasu, without_csrf,
};

const TOKEN: &str = "metrics-token-0f1e2d3c4b5a69788796a5b4c3d2e1f0";

async fn with_metrics(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| s.metrics_token = Some(SecretString::new(TOKEN))).await
}

async fn scrape(app: &TestApp, authorization: Option<&str>) -> Page {
    match authorization {
        Some(value) => app.browser().get_with("/metrics", &[("Authorization", value)]).await,
        None => app.browser().get("/metrics").await,
    }
}

/// A scrape with the right token, answered 200.
async fn scraped(app: &TestApp) -> String {
    let page = scrape(app, Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.body
}

/// The value of the sample `name{labels}` whose labels include every one of `labels`.
fn sample(body: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    body.lines().filter(|line| !line.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}')?),
            None => (series, ""),
        };
        let present: Vec<(&str, &str)> = series_labels
            .split(',')
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| pair.split_once('=').map(|(k, v)| (k, v.trim_matches('"'))))
            .collect();
        let matches = series_name == name && labels.iter().all(|label| present.contains(label));
        matches.then(|| value.parse().expect("a sample's value is a number"))
    })
}

async fn share_status(app: &TestApp, id: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND status = 'purged'", id).await
}

const LANDING_200: [(&str, &str); 3] = [("route", "/s/:token"), ("method", "GET"), ("status", "200")];

async fn without_a_metrics_token_the_endpoint_is_an_unknown_path(backend: Backend) {
    let app = TestApp::spawn(backend).await;

    let metrics = scrape(&app, Some(&format!("Bearer {TOKEN}"))).await;
    let unknown = app.browser().get("/no-such-page").await;

    assert_eq!(metrics.status, 404);
    // The same page, whose language link names the path asked for.
    assert_eq!(without_csrf(&metrics.body), without_csrf(&unknown.body.replace("/no-such-page", "/metrics")));
}

async fn a_scrape_without_the_right_bearer_token_is_refused_in_plain_text(backend: Backend) {
    let app = with_metrics(backend).await;
    let wrong = format!("Bearer {}", TOKEN.replace('0', "1"));

    for authorization in [None, Some(wrong.as_str()), Some(TOKEN), Some("Basic bWV0cmljczpzZWNyZXQ=")] {
        let refused = scrape(&app, authorization).await;
        assert_eq!(refused.status, 401, "{authorization:?}");
        assert_eq!(refused.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
        assert!(!refused.body.contains('<'), "a page, not plain text: {}", refused.body);
        assert!(refused.header("set-cookie").is_none(), "a refused scrape set a cookie");
    }

    let accepted = scrape(&app, Some(&format!("bearer  {TOKEN}"))).await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert!(accepted.header("content-type").unwrap().starts_with("text/plain; version=0.0.4"));
    assert!(accepted.header("set-cookie").is_none(), "a scrape set a cookie");
}

async fn a_shares_whole_life_shows_in_the_scrape_by_route_pattern_and_state_without_its_secrets(backend: Backend) {
    let app = with_metrics(backend).await;
    let before = scraped(&app).await;
    assert_eq!(sample(&before, "watasu_http_requests_total", &LANDING_200), None, "{before}");
    assert_eq!(sample(&before, "watasu_stored_bytes", &[]), Some(0.0));

    let share = app.create_share().await;
    let held = scraped(&app).await;
    assert_eq!(sample(&held, "watasu_shares", &[("state", "active")]), Some(1.0), "{held}");
    assert_eq!(sample(&held, "watasu_stored_bytes", &[]), Some(b"the file contents\n".len() as f64));

    let (browser, csrf) = app.verified_browser(&share).await;
    let download = browser.download(&share.token, &csrf).await;
    assert_eq!(download.status(), 200);
    // Read to the end: only a delivered file sends the receipt counted below.
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"the file contents\n");
    app.consumed_ago(share.id, 16 * 60).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while share_status(&app, share.id).await == 0 {
        // Ours, or the one the download asked for: either counts.
        let _ = app.state.services.gc.try_pass(Trigger::Cli).await;
        assert!(Instant::now() < deadline, "the downloaded share was never collected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.browser().get(&format!("/s/{}", "f".repeat(64))).await;
    app.browser().get("/no-such-page").await;

    let after = scraped(&app).await;
    assert!(sample(&after, "watasu_http_requests_total", &LANDING_200).unwrap_or(0.0) >= 1.0, "{after}");
    let landing_times = [("route", "/s/:token"), ("method", "GET")];
    assert!(sample(&after, "watasu_http_request_duration_seconds_count", &landing_times).unwrap_or(0.0) >= 1.0);
    let unknown_share = [("route", "/s/:token"), ("method", "GET"), ("status", "404")];
    assert_eq!(sample(&after, "watasu_http_requests_total", &unknown_share), Some(1.0), "{after}");
    let unknown_path = [("route", "other"), ("method", "GET"), ("status", "404")];
    assert_eq!(sample(&after, "watasu_http_requests_total", &unknown_path), Some(1.0), "{after}");
    assert_eq!(sample(&after, "watasu_shares", &[("state", "purged")]), Some(1.0), "{after}");
    assert_eq!(sample(&after, "watasu_shares", &[("state", "active")]), Some(0.0));
    assert_eq!(sample(&after, "watasu_stored_bytes", &[]), Some(0.0));
    assert!(sample(&after, "watasu_gc_passes_total", &[("result", "ok")]).unwrap_or(0.0) >= 1.0);
    assert!(sample(&after, "watasu_gc_pass_duration_seconds_count", &[]).unwrap_or(0.0) >= 1.0);
    assert_eq!(sample(&after, "watasu_gc_files_purged_total", &[]), Some(1.0));
    assert_eq!(sample(&after, "watasu_deletion_cases", &[("state", "received")]), Some(0.0));
    assert!(sample(&after, "watasu_mail_outbox_waiting", &[]).is_some());
    // The download receipt goes out through the outbox.
    eventually(Duration::from_secs(10), "the receipt's delivery counted", async || {
        sample(&scraped(&app).await, "watasu_mail_deliveries_total", &[("result", "sent")]).unwrap_or(0.0) >= 1.0
    })
    .await;

    let lowered = after.to_lowercase();
    for secret in [share.token.as_str(), RECIPIENT, "report.txt", TOKEN] {
        assert!(!lowered.contains(&secret.to_lowercase()), "the scrape names {secret}:\n{after}");
    }
}

async fn a_notification_that_fails_and_then_loses_its_share_is_counted_retrying_then_dropped(backend: Backend) {
    let app = with_metrics(backend).await;
    app.smtp.set_refusing(true);
    let sender = app.signed_in_sender("sato@example.test").await;
    let csrf = sender.get("/shares/new").await.csrf_token();
    let created = sender.post_new_share(Some(&csrf), RECIPIENT, "report.txt", b"plan".to_vec()).await;
    assert_eq!(created.status, 303, "{}", created.body);
    eventually(Duration::from_secs(10), "the refused notification counted as retrying", async || {
        sample(&scraped(&app).await, "watasu_mail_deliveries_total", &[("result", "retrying")]).unwrap_or(0.0) >= 1.0
    })
    .await;
    assert_eq!(sample(&scraped(&app).await, "watasu_mail_deliveries_total", &[("result", "dropped")]), None);

    let share_id = count(app.db(), "SELECT max(id) FROM shares WHERE id > $1", 0).await;
    let revoked = app.state.services.sharing.revoke(Actor::Operator, share_id).await.unwrap();
    assert_eq!(revoked, Change::Done(()));
    app.smtp.set_refusing(false);
    let mail_id = count(app.db(), "SELECT max(id) FROM mail_outbox WHERE share_id = $1", share_id).await;
    clock::set_ago(app.db(), "mail_outbox", &["next_attempt_at"], 1, &clock::id(mail_id)).await;
    let report = app.state.services.mails.outbox().deliver_due(app.state.mailer.as_ref(), 10).await.unwrap();

    assert_eq!(report.dropped, 1, "{report:?}");
    assert!(app.smtp.messages().is_empty(), "the notification of a revoked share never left");
    let after = scraped(&app).await;
    assert_eq!(sample(&after, "watasu_mail_deliveries_total", &[("result", "dropped")]), Some(1.0), "{after}");
    assert_eq!(sample(&after, "watasu_mail_deliveries_total", &[("result", "sent")]), None, "{after}");
}

async fn an_expired_share_counts_in_the_gc_backlog_until_a_pass_collects_it(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| {
        s.metrics_token = Some(SecretString::new(TOKEN));
        s.access_time_gc = false;
    })
    .await;
    let share = app.create_share().await;
    assert_eq!(sample(&scraped(&app).await, "watasu_gc_backlog", &[]), Some(0.0));

    app.expire_share(share.id).await;
    assert_eq!(sample(&scraped(&app).await, "watasu_gc_backlog", &[]), Some(1.0));

    let report = app.state.services.gc.try_pass(Trigger::Cli).await.expect("no other pass runs").unwrap();
    assert_eq!(report.purged, 1);
    let after = scraped(&app).await;
    assert_eq!(sample(&after, "watasu_gc_backlog", &[]), Some(0.0));
    assert_eq!(sample(&after, "watasu_gc_files_purged_total", &[]), Some(1.0));
}

async fn the_real_binary_takes_the_token_as_a_flag_and_never_logs_it(backend: Backend) {
    let install = Installation::new(backend).await;
    let server = install.start(&["--metrics-token", TOKEN]);
    let browser = Browser::new(&server.base());

    let refused = browser.get_with("/metrics", &[("Authorization", "Bearer not-the-token")]).await;
    let accepted = browser.get_with("/metrics", &[("Authorization", &format!("Bearer {TOKEN}"))]).await;

    assert_eq!(refused.status, 401);
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    let refused_count = [("route", "/metrics"), ("method", "GET"), ("status", "401")];
    assert_eq!(sample(&accepted.body, "watasu_http_requests_total", &refused_count), Some(1.0));
    server.wait_for_log("status=200", Duration::from_secs(5));
    assert!(!server.log().contains(TOKEN), "the log holds the metrics token:\n{}", server.log());
}

both_backends!(
    without_a_metrics_token_the_endpoint_is_an_unknown_path,
    a_scrape_without_the_right_bearer_token_is_refused_in_plain_text,
    a_shares_whole_life_shows_in_the_scrape_by_route_pattern_and_state_without_its_secrets,
    a_notification_that_fails_and_then_loses_its_share_is_counted_retrying_then_dropped,
    an_expired_share_counts_in_the_gc_backlog_until_a_pass_collects_it,
    the_real_binary_takes_the_token_as_a_flag_and_never_logs_it
);

#[test]
fn a_short_metrics_token_stops_start_up_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dir.path().to_str().unwrap()];
    let (code, _, stderr) = run_watasu(&args, &[("WATASU_METRICS_TOKEN", "too-short")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("WATASU_METRICS_TOKEN"), "{stderr}");
    assert!(!stderr.contains("too-short"), "the refusal repeats the token: {stderr}");
}
