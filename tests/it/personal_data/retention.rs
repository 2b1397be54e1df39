//! Personal data past its retention (`WATASU_RETENTION`, 30 days by default), in the new stores:
//! a webhook message names the recipient and the files, so once it is done with (delivered, dead
//! or dropped), older than the retention and behind what the dispatcher reads again it goes
//! whole; a request's uploader note is scrubbed with its share. Time moves through the database.

use std::collections::HashSet;

use watasu::{
    db::{Db, Sql},
    lifecycle::{LifecycleRepository, ShareGc},
    maintenance::{Kind, Trigger},
    on_db,
    share::ShareEvents,
    sql,
};

use crate::{
    both_backends,
    file_requests::{make_request, roomy},
    maintenance::{item_outcome, quiet_app},
    support::{
        Backend, PASSWORD, TestApp,
        clock::{self, DAY},
        execute,
    },
};

/// What a webhook body says of a handover: the recipient's address and the file's name.
const BODY: &str = r#"{"type":"share.downloaded","data":{"recipient":"client@example.test","files":["merger.pdf"]}}"#;

const ENDPOINT: Sql = sql!(
    "INSERT INTO webhook_endpoints (owner_id, team, url, event_types, secret, after_event_id, after_share_id)
     VALUES ($1, FALSE, 'https://hooks.example.test/in', 'share.downloaded', "
    { sqlite: "X'0102'", postgres: "'\\x0102'::bytea" } ", 0, 0)"
);

/// One message on the sender's endpoint about `source`, named `name`, in `status`.
async fn message(db: &Db, sender: i64, (name, source, status): (&str, &str, &str)) -> i64 {
    const INSERT: &str =
        "INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body, status)
         SELECT id, $2, owner_id, $3, 'share.downloaded', $4, $5 FROM webhook_endpoints WHERE owner_id = $1
         RETURNING id";
    on_db!(db, |pool| sqlx::query_scalar(INSERT)
        .bind(sender)
        .bind(source)
        .bind(name)
        .bind(BODY)
        .bind(status)
        .fetch_one(pool)
        .await
        .unwrap())
}

async fn message_names(db: &Db) -> HashSet<String> {
    const SQL: &str = "SELECT message_id FROM webhook_messages";
    let names: Vec<String> = on_db!(db, |pool| sqlx::query_scalar(SQL).fetch_all(pool).await.unwrap());
    names.into_iter().collect()
}

/// Past the retention, finished, and behind what the dispatcher reads again (its cursors are at
/// 1000): these go.
const GONE: [(&str, &str, &str); 5] = [
    ("old-delivered", "share_events:1", "delivered"),
    ("old-dead", "share_events:2", "dead"),
    ("old-dropped", "shares:3", "dropped"),
    ("old-test", "test:0a1b", "delivered"),
    ("old-at-the-edge", "share_events:800", "delivered"),
];
/// These stay: still waiting or being sent, younger than the retention, or a source the
/// dispatcher's lookback (200 ids) reads again, which would make and send it once more.
const KEPT: [(&str, &str, &str); 5] = [
    ("old-pending", "share_events:4", "pending"),
    ("old-sending", "share_events:5", "sending"),
    ("old-in-the-lookback", "share_events:801", "delivered"),
    ("old-share-in-the-lookback", "shares:900", "dead"),
    ("young-delivered", "share_events:6", "delivered"),
];

async fn finished_webhook_messages_go_past_the_retention_and_waiting_or_younger_ones_stay(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let sender = app.create_sender_with_password("hooks@example.test", "Hook Owner", PASSWORD).await;
    execute(db, ENDPOINT, sender).await;
    execute(db, Sql::same("UPDATE webhook_cursors SET last_id = 1000 WHERE last_id < $1"), 1000).await;
    let mut gone = Vec::new();
    for planted in GONE {
        gone.push(message(db, sender, planted).await);
    }
    for planted in KEPT {
        message(db, sender, planted).await;
    }
    clock::set_ago(db, "webhook_messages", &["created_at"], 31 * DAY, "message_id LIKE 'old-%'").await;
    clock::set_ago(db, "webhook_messages", &["created_at"], 29 * DAY, "message_id LIKE 'young-%'").await;

    let run = app.state.services.maintenance.run_now(Kind::WebhookMessages, Trigger::Cli).await.unwrap();

    assert_eq!((run.state.code(), run.deleted, run.skipped), ("succeeded", 5, 0));
    let expected: HashSet<String> = KEPT.map(|(name, _, _)| name.to_owned()).into();
    assert_eq!(message_names(db).await, expected, "only finished messages past the retention and the lookback go");
    for id in gone {
        assert_eq!(item_outcome(db, run.id, id).await, "deleted");
    }
    let summary = app.state.services.maintenance.ledger().summary(run.id).await.unwrap();
    let kinds: Vec<_> = summary.iter().map(|s| s.target_kind.code()).collect();
    assert_eq!(kinds, ["webhook_message"]);
    let again = app.state.services.maintenance.run_now(Kind::All, Trigger::Cli).await.unwrap();
    assert_eq!(message_names(db).await, expected, "a later run of every sweep finds nothing more to take");
    assert_eq!(again.failed, 0);
}

/// Two requests answered with a note: both purged, one of them past the retention.
async fn purged_requests_with_notes(app: &TestApp) -> [i64; 2] {
    const NOTE: Sql = Sql::same(
        "UPDATE file_requests SET uploader_note = 'Note for request ' || CAST($1 AS TEXT)
          WHERE handover_id = (SELECT handover_id FROM shares WHERE id = $1)",
    );
    let mut ids = [0; 2];
    for id in &mut ids {
        *id = make_request(app, roomy()).await.id;
        assert_eq!(execute(app.db(), NOTE, *id).await, 1);
        app.expire_share(*id).await;
    }
    let db = app.db();
    let repo = LifecycleRepository::new(db.clone(), std::time::Duration::ZERO, std::time::Duration::from_secs(3600));
    let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone()));
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 2);
    clock::set_ago(db, "shares", &["purged_at"], 31 * DAY, &clock::id(ids[0])).await;
    clock::set_ago(db, "shares", &["purged_at"], 29 * DAY, &clock::id(ids[1])).await;
    ids
}

async fn what_a_request_keeps(db: &Db, share_id: i64) -> String {
    const SQL: &str = "SELECT s.recipient_email || '|' || r.uploader_note
                         FROM shares s JOIN file_requests r ON r.handover_id = s.handover_id WHERE s.id = $1";
    on_db!(db, |pool| sqlx::query_scalar(SQL).bind(share_id).fetch_one(pool).await.unwrap())
}

/// The run's ledger item for a share whose personal data the retention sweep took.
async fn scrub_outcome(db: &Db, run_id: i64, share_id: i64) -> String {
    const SQL: &str = "SELECT outcome FROM maintenance_items
                        WHERE run_id = $1 AND target_kind = 'share_personal_data' AND target_id = $2";
    on_db!(db, |pool| sqlx::query_scalar(SQL).bind(run_id).bind(share_id).fetch_one(pool).await.unwrap())
}

async fn a_requests_uploader_note_is_scrubbed_with_its_share_once_past_the_retention(backend: Backend) {
    let app = quiet_app(backend).await;
    let [old, young] = purged_requests_with_notes(&app).await;

    let run = app.state.services.maintenance.run_now(Kind::All, Trigger::Cli).await.unwrap();

    assert_eq!((run.state.code(), run.failed), ("succeeded", 0));
    assert_eq!(what_a_request_keeps(app.db(), old).await, "|", "the uploader's address and note are gone");
    let young_note = format!("{}|Note for request {young}", crate::file_requests::UPLOADER);
    assert_eq!(what_a_request_keeps(app.db(), young).await, young_note, "a younger request keeps its note");
    assert_eq!(scrub_outcome(app.db(), run.id, old).await, "deleted");
    let everything = crate::deletion::fixtures::dump_all(app.db()).await;
    assert!(!everything.contains(&format!("Note for request {old}")), "the old note is nowhere in the database");
}

both_backends!(
    finished_webhook_messages_go_past_the_retention_and_waiting_or_younger_ones_stay,
    a_requests_uploader_note_is_scrubbed_with_its_share_once_past_the_retention
);
