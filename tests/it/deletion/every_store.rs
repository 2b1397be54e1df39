//! A case for a sender who holds data in every store the schema has: each store is a step named
//! in the evidence, and afterwards every table's rows of the sender (found by the classification
//! in `personal_data.rs`, not by the code under test) are gone, while the evidence copies none of
//! what was deleted.

use watasu::{
    db::{Db, Sql},
    deletion::{CaseState, Outcome, Store},
    on_db, sql,
};

use super::fixtures::*;
use crate::{
    both_backends,
    personal_data::{SenderRows, TABLES},
    support::{Backend, TestApp, execute},
};

/// What is planted, and must not reach the evidence.
const TOKEN_LABEL: &str = "nightly-export-of-leaver";
const PASSKEY_NAME: &str = "Phone of the leaver";
const UPLOADER_NOTE: &str = "Here are the signed contracts, Tanaka";
const ENDPOINT_URL: &str = "https://hooks.leaver.example/in";

/// Rows in every store `populate` leaves empty, each written for the sender (`$1`).
const PLANTS: [Sql; 16] = [
    sql!("INSERT INTO api_tokens (user_id, name, lookup_id, token_hash, scopes)
          VALUES ($1, 'nightly-export-of-leaver', 'lookup-of-' || CAST($1 AS TEXT), 'hash-of-leaver', 'shares:read')"),
    sql!("INSERT INTO passkeys (user_id, credential_id, name, passkey) VALUES ($1, " { sqlite: "CAST('credential-' || $1 AS BLOB)", postgres: "convert_to('credential-' || CAST($1 AS TEXT), 'UTF8')" } ", 'Phone of the leaver', '{}')"),
    sql!("INSERT INTO totp_factors (user_id, secret_sealed) VALUES ($1, " { sqlite: "X'0102'", postgres: "'\\x0102'::bytea" } ")"),
    sql!("INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, 'recovery-hash-of-leaver')"),
    // A password sign-in still owing its second factor: a signed-out session, not the account's.
    sql!("INSERT INTO sessions (id_hash, csrf_secret, expires_at)
          SELECT 'pending-of-' || CAST($1 AS TEXT), 'x', " now " + " secs("3600") " FROM users WHERE id = $1"),
    sql!("INSERT INTO pending_sign_ins (session_id, user_id, purpose, expires_at)
          SELECT id, $1, 'verify', " now " + " secs("600") " FROM sessions WHERE id_hash = 'pending-of-' || CAST($1 AS TEXT)"),
    sql!("INSERT INTO passkey_ceremonies (session_id, purpose, user_id, state, expires_at)
          SELECT id, 'second_factor', $1, '{}', " now " + " secs("600") " FROM sessions WHERE id_hash = 'pending-of-' || CAST($1 AS TEXT)"),
    sql!("UPDATE handovers SET has_note = TRUE, note_sealed = " { sqlite: "X'0102'", postgres: "'\\x0102'::bytea" } "
           WHERE id = (SELECT min(id) FROM handovers WHERE sender_id = $1)"),
    // A reply to one of the sender's shares, with the note its uploader left.
    sql!("INSERT INTO handovers (sender_id) VALUES ($1)"),
    sql!("INSERT INTO file_requests (handover_id, max_files, max_file_bytes, max_total_bytes, uploader_note, reply_to_share_id)
          SELECT max(id), 1, 10, 10, 'Here are the signed contracts, Tanaka',
                 (SELECT min(id) FROM shares WHERE sender_id = $1)
            FROM handovers WHERE sender_id = $1"),
    sql!("INSERT INTO webhook_endpoints (owner_id, team, url, event_types, secret, after_event_id, after_share_id)
          VALUES ($1, FALSE, 'https://hooks.leaver.example/in', 'share.opened', " { sqlite: "X'0102'", postgres: "'\\x0102'::bytea" } ", 1000000000, 1000000000)"),
    sql!("INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body, status)
          SELECT id, 'shares:1', $1, 'own-endpoint-' || CAST($1 AS TEXT), 'share.created', '{}', 'delivered'
            FROM webhook_endpoints WHERE owner_id = $1"),
    sql!("INSERT INTO upload_pieces (upload_id, start_offset, piece) SELECT id, 0, 'piece-0' FROM uploads WHERE owner_id = $1"),
    sql!("INSERT INTO upload_parts (upload_id, start_offset, e_tag) SELECT id, 0, 'etag-0' FROM uploads WHERE owner_id = $1"),
    sql!("INSERT INTO file_sealings (file_id, plain_key) SELECT min(id), 'plain-key-of-leaver' FROM files WHERE owner_id = $1"),
    sql!("INSERT INTO delivered_ranges (share_id, first_byte, end_byte) SELECT min(id), 0, 3 FROM shares WHERE sender_id = $1"),
];
/// The bystander's (an admin's) team endpoint, `$1` its owner; then a message on it about a
/// share of the sender (`$1` the sender).
const TEAM_ENDPOINT: Sql = sql!(
    "INSERT INTO webhook_endpoints (owner_id, team, url, event_types, secret, after_event_id, after_share_id)
     VALUES ($1, TRUE, 'https://hooks.team.example/in', 'share.opened', " { sqlite: "X'0102'", postgres: "'\\x0102'::bytea" } ", 1000000000, 1000000000)"
);
const ON_TEAM_ENDPOINT: Sql = sql!(
    "INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body, status)
     SELECT id, 'shares:' || CAST($1 AS TEXT), $1, 'team-endpoint-' || CAST($1 AS TEXT), 'share.created', '{}', 'delivered'
       FROM webhook_endpoints WHERE url = 'https://hooks.team.example/in'"
);
const POLICY_SET_BY: Sql = sql!("UPDATE sign_in_policy SET updated_by = $1, updated_at = " now);

/// The sender's ids, taken before the case (afterwards the rows that name them are gone).
struct Keys {
    id: i64,
    email: String,
    lists: Vec<(&'static str, String)>,
    share_buckets: String,
}

async fn ids(db: &Db, sql: &'static str, id: i64) -> Vec<i64> {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(id).fetch_all(pool).await.unwrap())
}

impl Keys {
    async fn of(db: &Db, id: i64, email: &str) -> Self {
        let mut lists = Vec::new();
        let mut share_ids = Vec::new();
        for (name, sql) in [
            ("{shares}", "SELECT id FROM shares WHERE sender_id = $1"),
            ("{handovers}", "SELECT id FROM handovers WHERE sender_id = $1"),
            ("{files}", "SELECT id FROM files WHERE owner_id = $1"),
            ("{uploads}", "SELECT id FROM uploads WHERE owner_id = $1"),
            ("{endpoints}", "SELECT id FROM webhook_endpoints WHERE owner_id = $1"),
        ] {
            let found = ids(db, sql, id).await;
            assert!(!found.is_empty(), "the sender has no {name}");
            if name == "{shares}" {
                share_ids = found.clone();
            }
            lists.push((name, found.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")));
        }
        let buckets: Vec<_> = share_ids.iter().map(|s| format!("bucket LIKE 'share:{s}:%'")).collect();
        Self { id, email: email.to_owned(), lists, share_buckets: format!("({})", buckets.join(" OR ")) }
    }

    /// The sender's rows in `table` by the classification's condition.
    async fn count(&self, db: &Db, table: &str, condition: &str) -> i64 {
        let mut condition = condition
            .replace("{id}", &self.id.to_string())
            .replace("{email}", &self.email)
            .replace("{share_buckets}", &self.share_buckets);
        for (name, list) in &self.lists {
            condition = condition.replace(name, list);
        }
        let sql = format!("SELECT count(*) FROM {table} WHERE {condition}");
        on_db!(db, |pool| sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await.unwrap())
    }

    /// Every classified table's count of the sender's rows.
    async fn counts(&self, db: &Db) -> Vec<(&'static str, i64)> {
        let mut counts = Vec::new();
        for table in TABLES {
            if let SenderRows::Steps(condition, _) = table.sender {
                counts.push((table.name, self.count(db, table.name, condition).await));
            }
        }
        counts
    }
}

/// The team endpoint of `owner` (an admin's, hearing every sender), made once: each planted
/// sender gets a message on it.
pub(super) async fn team_endpoint(app: &TestApp, owner: i64) {
    assert_eq!(execute(app.db(), TEAM_ENDPOINT, owner).await, 1);
}

/// Data of `sender` in every store `populate` leaves empty, and a message on the team endpoint
/// ([`team_endpoint`]) about one of the sender's shares.
pub(super) async fn plant_in_every_store(app: &TestApp, sender: i64) {
    let db = app.db();
    for plant in PLANTS.iter().chain([&ON_TEAM_ENDPOINT, &POLICY_SET_BY]) {
        assert!(execute(db, *plant, sender).await > 0, "{}", plant.sqlite);
    }
}

async fn a_case_names_every_store_in_its_evidence_and_leaves_the_sender_in_none(backend: Backend) {
    let app = deletion_app(backend).await;
    let bystander = populate(&app, "other@example.test").await;
    let sender = populate(&app, "leaving@example.test").await;
    team_endpoint(&app, bystander.id).await;
    plant_in_every_store(&app, sender.id).await;
    let keys = Keys::of(app.db(), sender.id, &sender.email).await;
    let before = keys.counts(app.db()).await;
    let empty: Vec<_> = before.iter().filter(|(_, n)| *n == 0).collect();
    assert!(empty.is_empty(), "the sender holds nothing in {empty:?}");
    let runner = runner(&app, "every-store");

    let case = admin_case(&runner, sender.id).await;
    assert_eq!(runner.run_case(case.id).await.unwrap(), Some(CaseState::Completed));

    let evidence = app.state.services.deletion.cases().evidence(case.id).await.unwrap();
    for store in Store::ORDER {
        let named = evidence.iter().find(|e| e.store == store);
        let row = named.unwrap_or_else(|| panic!("the evidence does not name {store:?}"));
        assert_eq!(row.searched_by, store.searched_by(), "{store:?}");
    }
    let newly_named = [
        Store::ApiTokens,
        Store::SignInMethods,
        Store::Notes,
        Store::FileRequests,
        Store::WebhookMessages,
        Store::WebhookEndpoints,
    ];
    for store in newly_named {
        let row = evidence.iter().find(|e| e.store == store).unwrap();
        assert_eq!((row.outcome, row.remaining), (Outcome::Deleted, Some(0)), "{store:?}: {row:?}");
        assert!(row.found.unwrap_or(0) > 0, "{store:?} found nothing: {row:?}");
    }
    let after = keys.counts(app.db()).await;
    let left: Vec<_> = after.iter().filter(|(_, n)| *n > 0).collect();
    assert!(left.is_empty(), "the sender is still in {left:?}");
    let kept =
        crate::support::count(app.db(), "SELECT count(*) FROM webhook_endpoints WHERE owner_id = $1", bystander.id);
    assert_eq!(kept.await, 1, "the bystander's endpoint goes with nobody else's data");
    let evidence_text = dump_evidence(app.db()).await;
    for planted in [sender.email.as_str(), TOKEN_LABEL, PASSKEY_NAME, UPLOADER_NOTE, ENDPOINT_URL] {
        assert!(!evidence_text.contains(planted), "the evidence copies {planted:?}");
    }
}

both_backends!(a_case_names_every_store_in_its_evidence_and_leaves_the_sender_in_none);
