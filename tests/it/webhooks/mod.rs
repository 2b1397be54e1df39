//! Signed webhooks against a real receiver that checks signatures with its own implementation of
//! the spec (Python's standard library, see [`receiver`]): a real handover's events arrive
//! verified; while the receiver answers 500 the messages wait for their backoff (time moved in the
//! database) and come again with the same `webhook-id`; a rotation sends two signatures that both
//! verify; private addresses are refused when registering and when delivering; nothing is made or
//! sent for a sender who is disabled or being deleted; the payload holds no link token, and the
//! signing secrets are not stored readable.

mod lanes;
mod pages;
pub(crate) mod receiver;

use sha2::{Digest, Sha256};
use watasu::{
    accounts::{User, Users},
    db::Sql,
    services::webhooks::{EndpointRefusal, Reach},
    share::EventKind,
    sql,
    webhooks::{EventType, guard::Refusal},
};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, count, execute, tables_as_text},
};
use receiver::Receiver;

const REPORT: &[u8] = b"quarterly numbers";

/// The app as the tests run it: loopback allowed, so the receiver on 127.0.0.1 can be reached.
pub(crate) async fn app_allowing_loopback(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| s.webhook_allow_networks = vec!["127.0.0.0/8".parse().unwrap()]).await
}

async fn user(app: &TestApp, id: i64) -> User {
    Users::new(app.db().clone()).find_active(id).await.unwrap().expect("an active account")
}

/// Messages that are being sent or due now.
async fn unsettled(app: &TestApp) -> i64 {
    const SQL: watasu::db::Sql = sql!(
        "SELECT count(*) FROM webhook_messages WHERE id > $1
            AND (status = 'sending' OR (status = 'pending' AND next_attempt_at <= " now "))"
    );
    watasu::on_db!(app.db(), |pool| {
        use watasu::db::Dialect;
        sqlx::query_scalar(pool.sql(&SQL)).bind(0_i64).fetch_one(pool).await.unwrap()
    })
}

/// Dispatches and delivers until nothing is in flight or due (the app's own worker may take a
/// part of it: whoever sends, the receiver's log and the rows tell).
pub(crate) async fn settle(app: &TestApp) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        app.state.services.webhooks.dispatch().await.unwrap();
        app.state.services.webhooks.deliver_due().await.unwrap();
        if unsettled(app).await == 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "webhook messages never settled");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Makes every waiting message due now, as if its backoff had passed.
async fn skip_backoff(app: &TestApp) -> u64 {
    execute(
        app.db(),
        sql!("UPDATE webhook_messages SET next_attempt_at = " now " WHERE status = 'pending' AND id > $1"),
        0,
    )
    .await
}

async fn a_handovers_events_arrive_verified_retried_with_the_same_id_and_signed_twice_during_a_rotation(
    backend: Backend,
) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(2).await;
    let sender_id = app.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&app, sender_id).await;
    let webhooks = &app.state.services.webhooks;
    let registered =
        webhooks.register(&sender, &receiver.url(), &EventType::CHOOSABLE, Reach::Own).await.unwrap().unwrap();
    let secret = registered.secret.expose().to_owned();
    receiver.accept(&[&secret]);

    let share = app.fake_share().sender(sender_id).recipient(RECIPIENT).file("report.pdf", REPORT).create().await;
    app.state.events.record(share.id, EventKind::CodeSent).await.unwrap();
    app.state.events.record(share.id, EventKind::Opened).await.unwrap();
    app.state.events.record(share.id, EventKind::Completed).await.unwrap();
    app.fake_share().recipient(RECIPIENT).create().await; // another sender's: not this endpoint's
    settle(&app).await;

    // The first two attempts were answered 500: they wait for their backoff (at least 15 s).
    let waiting: i64 = count(
        app.db(),
        "SELECT count(*) FROM webhook_messages WHERE status = 'pending' AND attempts = 1 AND last_status = 500
            AND endpoint_id = $1",
        registered.endpoint_id,
    )
    .await;
    assert_eq!(waiting, 2);
    assert_eq!(receiver.received().len(), 3);
    assert_eq!(skip_backoff(&app).await, 2);
    settle(&app).await;

    let received = receiver.received();
    assert_eq!(received.len(), 5, "{received:#?}");
    assert_eq!(received.iter().map(|r| r.status).collect::<Vec<_>>(), [500, 500, 200, 200, 200]);
    for failed in &received[..2] {
        assert!(received[2..].iter().any(|r| r.id == failed.id), "a retry keeps its webhook-id: {received:#?}");
    }
    for request in &received {
        assert_eq!((request.signatures, &request.verified, request.fresh), (1, &vec![secret.clone()], true));
    }
    let mut types: Vec<&str> = received[2..].iter().map(|r| r.body["type"].as_str().unwrap()).collect();
    types.sort();
    assert_eq!(types, ["share.created", "share.downloaded", "share.opened"]);
    let downloaded = received.iter().find(|r| r.body["type"] == "share.downloaded").unwrap();
    let data = &downloaded.body["data"];
    assert_eq!(data["share_id"], share.id);
    assert_eq!(data["recipient"], RECIPIENT);
    assert_eq!(data["files"][0]["name"], "report.pdf");
    assert_eq!(data["files"][0]["size"], REPORT.len());
    assert_eq!(data["files"][0]["sha256"], hex::encode(Sha256::digest(REPORT)));
    assert!(chrono::DateTime::parse_from_rfc3339(downloaded.body["timestamp"].as_str().unwrap()).is_ok());
    for request in &received {
        let text = request.body.to_string();
        assert!(!text.contains(&share.token), "a link token in {text}");
        assert!(!text.contains(std::str::from_utf8(REPORT).unwrap()), "file content in {text}");
    }

    let page = webhooks.endpoint(&sender, registered.endpoint_id).await.unwrap().unwrap();
    assert_eq!(page.log.len(), 3);
    assert!(page.log.iter().all(|m| m.status.code() == "delivered" && m.last_status == Some(200)));
    assert_eq!(page.log.iter().map(|m| m.attempts).sum::<i32>(), 2);

    let rotated = webhooks.rotate_secret(&sender, registered.endpoint_id).await.unwrap().unwrap();
    assert_ne!(rotated.expose(), secret);
    let stored: String = tables_as_text(app.db()).await.into_iter().map(|(_, rows)| rows).collect();
    for kept_sealed in [&secret[6..], &rotated.expose()[6..]] {
        assert!(!stored.contains(kept_sealed), "a signing secret is stored readable");
    }
    receiver.accept(&[&secret, rotated.expose()]);
    assert!(webhooks.send_test(&sender, registered.endpoint_id).await.unwrap());
    settle(&app).await;
    let test = receiver.received().pop().unwrap();
    assert_eq!(test.body["type"], "webhook.test");
    assert_eq!(test.signatures, 2);
    assert_eq!(test.verified, [secret.clone(), rotated.expose().to_owned()], "both signatures verify");

    // After the overlap only the new secret signs.
    execute(
        app.db(),
        sql!("UPDATE webhook_endpoints SET previous_until = " now " WHERE id = $1"),
        registered.endpoint_id,
    )
    .await;
    assert!(webhooks.send_test(&sender, registered.endpoint_id).await.unwrap());
    settle(&app).await;
    let test = receiver.received().pop().unwrap();
    assert_eq!((test.signatures, test.verified), (1, vec![rotated.expose().to_owned()]));
}

async fn private_addresses_are_refused_when_registering_and_when_delivering(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender_id = app.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&app, sender_id).await;
    let webhooks = &app.state.services.webhooks;
    let types = [EventType::ShareOpened];
    for (url, address) in [
        ("https://10.0.0.1/hook", "10.0.0.1"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
    ] {
        let refused = webhooks.register(&sender, url, &types, Reach::Own).await.unwrap().unwrap_err();
        assert_eq!(refused, EndpointRefusal::Address(Refusal::Internal(address.parse().unwrap())), "{url}");
    }
    let refused = webhooks.register(&sender, "https://hooks.example.test:0/", &types, Reach::Own).await.unwrap();
    assert_eq!(refused.unwrap_err(), EndpointRefusal::Address(Refusal::PortZero));
    for (url, address) in [("https://[2002:808:808::1]/", "2002:808:808::1"), ("https://[2001::1]/", "2001::1")] {
        let refused = webhooks.register(&sender, url, &types, Reach::Own).await.unwrap().unwrap_err();
        assert_eq!(refused, EndpointRefusal::Address(Refusal::Internal(address.parse().unwrap())), "{url}");
    }
    let localhost = webhooks.register(&sender, "https://localhost:9/", &types, Reach::Own).await.unwrap();
    assert!(matches!(localhost, Err(EndpointRefusal::Address(Refusal::Internal(ip))) if ip.is_loopback()));
    let receiver = Receiver::start(0).await;
    let plain = webhooks.register(&sender, &receiver.url(), &types, Reach::Own).await.unwrap();
    assert!(matches!(plain, Err(EndpointRefusal::Address(Refusal::Internal(_)))), "{plain:?}");
    let team = webhooks.register(&sender, "https://hooks.example.test/", &types, Reach::Team).await.unwrap();
    assert_eq!(team.unwrap_err(), EndpointRefusal::NotAdmin);

    // An endpoint whose name resolves elsewhere later: every attempt checks again, and connects
    // nowhere. (Its address is changed in the database, as a name's answer may change.)
    let allowed = app_allowing_loopback(backend).await;
    let sender_id = allowed.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&allowed, sender_id).await;
    let webhooks = &allowed.state.services.webhooks;
    let registered = webhooks.register(&sender, &receiver.url(), &types, Reach::Own).await.unwrap().unwrap();
    receiver.accept(&[registered.secret.expose()]);
    let moved = Sql::same("UPDATE webhook_endpoints SET url = 'http://169.254.169.254/latest/meta-data' WHERE id = $1");
    execute(allowed.db(), moved, registered.endpoint_id).await;
    assert!(webhooks.send_test(&sender, registered.endpoint_id).await.unwrap());
    settle(&allowed).await;
    let page = webhooks.endpoint(&sender, registered.endpoint_id).await.unwrap().unwrap();
    let entry = &page.log[0];
    assert_eq!((entry.status.code(), entry.attempts, entry.last_status), ("pending", 1, None));
    let error = entry.last_error.as_deref().unwrap();
    assert!(error.starts_with("refused:") && error.contains("169.254.169.254"), "{error}");
    // Port 0 on an allowed network is refused at delivery too.
    let moved = Sql::same("UPDATE webhook_endpoints SET url = 'http://127.0.0.1:0/hook' WHERE id = $1");
    execute(allowed.db(), moved, registered.endpoint_id).await;
    assert!(webhooks.send_test(&sender, registered.endpoint_id).await.unwrap());
    settle(&allowed).await;
    let page = webhooks.endpoint(&sender, registered.endpoint_id).await.unwrap().unwrap();
    let errors: Vec<&str> = page.log.iter().filter_map(|entry| entry.last_error.as_deref()).collect();
    assert!(errors.iter().any(|e| e.starts_with("refused:") && e.contains("port 0")), "{errors:?}");
    assert!(receiver.received().is_empty());
}

async fn nothing_is_made_or_sent_for_a_sender_disabled_or_being_deleted(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(0).await;
    let admin_id = app.create_admin("admin@example.test").await;
    let admin = user(&app, admin_id).await;
    let webhooks = &app.state.services.webhooks;
    let registered =
        webhooks.register(&admin, &receiver.url(), &[EventType::ShareOpened], Reach::Team).await.unwrap().unwrap();
    receiver.accept(&[registered.secret.expose()]);
    let staying = app.fake_share().create().await;
    let leaving = app.fake_share().create().await;
    let disabled = app.fake_share().create().await;

    let case = Sql::same(
        "INSERT INTO deletion_cases (reference, subject_id, subject_created_at, actor_role, state)
         SELECT 'case-webhooks', id, created_at, 'operator', 'in_progress' FROM users WHERE id = $1",
    );
    execute(app.db(), case, leaving.sender_id).await;
    // A message queued before the deletion case opened (stored now, as it was) is dropped, never
    // sent.
    let queued = Sql::same(
        "INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body)
         SELECT w.id, 'event:0', s.sender_id, 'msg_queued_before', 'share.opened', '{}'
           FROM webhook_endpoints w, shares s WHERE s.id = $1",
    );
    execute(app.db(), queued, leaving.id).await;
    Users::new(app.db().clone()).disable(disabled.sender_id, admin_id).await.unwrap();
    for share in [&staying, &leaving, &disabled] {
        app.state.events.record(share.id, EventKind::Opened).await.unwrap();
    }
    settle(&app).await;

    let received = receiver.received();
    assert_eq!(received.len(), 1, "{received:#?}");
    assert_eq!(received[0].body["data"]["share_id"], staying.id);
    let per_sender = "SELECT count(*) FROM webhook_messages WHERE sender_id = $1";
    assert_eq!(count(app.db(), per_sender, disabled.sender_id).await, 0, "made for a disabled sender");
    let dropped = "SELECT count(*) FROM webhook_messages WHERE sender_id = $1 AND status = 'dropped'";
    assert_eq!(count(app.db(), per_sender, leaving.sender_id).await, 1, "made for a sender being deleted");
    assert_eq!(count(app.db(), dropped, leaving.sender_id).await, 1);
}

async fn a_pass_reads_the_lookback_again_but_makes_each_facts_messages_once(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(0).await;
    let sender_id = app.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&app, sender_id).await;
    let webhooks = &app.state.services.webhooks;
    let types = [EventType::ShareCreated];
    let endpoint = webhooks.register(&sender, &receiver.url(), &types, Reach::Own).await.unwrap().unwrap();
    app.fake_share().sender(sender_id).create().await;
    webhooks.dispatch().await.unwrap();
    let made = "SELECT count(*) FROM webhook_messages WHERE endpoint_id = $1";
    assert_eq!(count(app.db(), made, endpoint.endpoint_id).await, 1);

    // The next pass reads the share again (it is within the lookback), and stores nothing for it:
    // a message gone from the table is not made again.
    execute(app.db(), Sql::same("DELETE FROM webhook_messages WHERE endpoint_id = $1"), endpoint.endpoint_id).await;
    webhooks.dispatch().await.unwrap();
    assert_eq!(count(app.db(), made, endpoint.endpoint_id).await, 0);
    app.fake_share().sender(sender_id).create().await;
    webhooks.dispatch().await.unwrap();
    assert_eq!(count(app.db(), made, endpoint.endpoint_id).await, 1, "a new share is news");
}

both_backends!(
    a_pass_reads_the_lookback_again_but_makes_each_facts_messages_once,
    a_handovers_events_arrive_verified_retried_with_the_same_id_and_signed_twice_during_a_rotation,
    private_addresses_are_refused_when_registering_and_when_delivering,
    nothing_is_made_or_sent_for_a_sender_disabled_or_being_deleted,
);
