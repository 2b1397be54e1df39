//! Every table of the schema, classified: the columns that hold personal data and how each ends
//! once it is no longer needed (a maintenance sweep, the GC, the application clearing it, or the
//! account's own data that lives as long as the account does), and how a sender's rows in it are
//! found and which deletion steps empty it. Every column is listed, as personal data or as plain:
//! a table or a column the live schema has and this list lacks fails the test on both backends
//! until it is classified. The deletion tests run every sender query after a case
//! (`deletion/every_store.rs`); the retention sweeps are shown in `retention`.

mod retention;

use std::collections::{BTreeSet, HashSet};

use watasu::{
    db::Db,
    deletion::Store,
    maintenance::Kind::{self, *},
};

use crate::{both_backends, support::Backend};

/// How a column's personal data ends.
#[derive(Debug)]
pub(crate) enum Ends {
    /// The sweep deletes its rows, or scrubs the column, once they are past their keep.
    Sweep(Kind),
    /// The garbage collector removes the row with the bytes it belongs to.
    Gc(&'static str),
    /// The application empties it once it has served.
    Cleared(&'static str),
    /// The account's own data: kept while the account exists; its deletion case removes it.
    WithAccount,
}

/// What a table holds of people.
#[derive(Debug)]
pub(crate) enum Personal {
    /// Nothing personal, and why.
    None(&'static str),
    Columns(&'static [(&'static str, Ends)]),
}

/// How a sender's rows in a table are found, and which deletion steps empty them.
#[derive(Debug)]
pub(crate) enum SenderRows {
    /// A condition over the table that finds the sender's rows, with `{id}`, `{email}`, and the
    /// sender's ids taken before the case: `{shares}`, `{handovers}`, `{files}`, `{uploads}`,
    /// `{endpoints}`, `{share_buckets}` (a condition on `bucket`); then the steps that empty them
    /// (directly or by the cascade of the row they hang on).
    Steps(&'static str, &'static [Store]),
    /// Why a deletion case does not search it.
    NotSearched(&'static str),
}

#[derive(Debug)]
pub(crate) struct Table {
    pub name: &'static str,
    pub personal: Personal,
    /// Every other column, separated by spaces: none of them names or describes a person.
    pub plain: &'static str,
    pub sender: SenderRows,
}

const fn table(name: &'static str, personal: Personal, plain: &'static str, sender: SenderRows) -> Table {
    Table { name, personal, plain, sender }
}

use Ends::*;
use Personal::{Columns, None as Nothing};
use SenderRows::{NotSearched, Steps};

const UPLOAD_GC: Ends = Gc("an upload's row goes when it becomes a share's file, or once it expires");

pub(crate) const TABLES: &[Table] = &[
    table(
        "users",
        Columns(&[
            ("email", WithAccount),
            ("display_name", WithAccount),
            ("password_hash", WithAccount),
            ("sso_subject", WithAccount),
            ("time_zone", WithAccount),
        ]),
        "id role lang created_at disabled_at share_mail_lang",
        Steps("id = {id}", &[Store::Account]),
    ),
    table(
        "files",
        Columns(&[("original_name", Sweep(ShareRetention))]),
        "id owner_id storage_key content_type size_bytes sha256 created_at crc32 handover_id position purged_at scan_state scan_attempts scan_next_at scan_finding scanned_at scan_told_at sealing wrapped_key file_key_id key_destroyed_at",
        Steps("owner_id = {id}", &[Store::FileKeys, Store::StoredFiles, Store::FileRecords]),
    ),
    table(
        "shares",
        Columns(&[("recipient_email", Sweep(ShareRetention)), ("message", Sweep(ShareRetention))]),
        "id handover_id sender_id token_hash lang notify_on_download status expires_at consumed_at purged_at revoked_at purge_attempts next_purge_attempt_at wrong_codes locked_at created_at claimed_session_id delivered_bytes delivered_at delivery_started_at name_file_in_mail kind closed_at",
        Steps("sender_id = {id}", &[Store::Shares]),
    ),
    table(
        "sessions",
        Nothing("a hash of the cookie, a CSRF secret and times"),
        "id id_hash user_id csrf_secret created_at last_seen_at expires_at",
        Steps("user_id = {id}", &[Store::Sessions]),
    ),
    table(
        "download_grants",
        Nothing("two ids and times"),
        "session_id share_id expires_at created_at",
        Steps("share_id IN ({shares})", &[Store::Grants]),
    ),
    table(
        "otp_challenges",
        Columns(&[("typed_address", Sweep(Codes))]),
        "id share_id session_id code_mac expires_at attempts consumed_at invalidated_at created_at mailed notice code_sealed resent_at blocked_until",
        Steps("share_id IN ({shares})", &[Store::Codes]),
    ),
    table(
        "share_events",
        Nothing("kinds, times and file positions"),
        "id share_id kind at file_position",
        Steps("share_id IN ({shares})", &[Store::ShareEvents]),
    ),
    table(
        "rate_limit_hits",
        Columns(&[("bucket", Sweep(RateLimits))]),
        "id at",
        Steps("bucket LIKE '%{email}%' OR {share_buckets}", &[Store::RateLimits]),
    ),
    table(
        "mail_outbox",
        Columns(&[
            ("envelope_from", Sweep(Outbox)),
            ("recipient", Sweep(Outbox)),
            ("subject", Sweep(Outbox)),
            ("message", Sweep(Outbox)),
        ]),
        "id share_id kind status attempts next_attempt_at claimed_at last_error created_at sent_at",
        Steps("share_id IN ({shares}) OR recipient = '{email}'", &[Store::DeliveredMail, Store::Outbox]),
    ),
    table(
        "invitations",
        Columns(&[("email", Sweep(Invitations))]),
        "id token_hash role invited_by created_at expires_at used_at lang",
        Steps("invited_by = {id} OR email = '{email}'", &[Store::Invitations, Store::Account]),
    ),
    table(
        "maintenance_runs",
        Nothing("kinds, states, counts and codes"),
        "id kind trigger idempotency_key_hash state cutoff batches deleted skipped already_gone failed note accepted_at started_at finished_at",
        NotSearched("it names no one"),
    ),
    table(
        "maintenance_items",
        Nothing("rows named by id, outcomes and classes"),
        "id run_id target_kind target_id outcome reason at",
        NotSearched("it names no one"),
    ),
    table(
        "maintenance_leases",
        Nothing("a sweep's name and its holder"),
        "name holder expires_at",
        NotSearched("it names no one"),
    ),
    table(
        "deletion_cases",
        Columns(&[("notify_email", Cleared("emptied once the final mail has left or was given up"))]),
        "id reference subject_id subject_created_at actor_id actor_role reapplies state final_mail mail_attempts next_attempt_at lease_owner lease_until created_at updated_at finished_at",
        NotSearched("the case's own record: an opaque reference, the account's id, states and times"),
    ),
    table(
        "deletion_steps",
        Nothing("stores, outcomes and counts"),
        "case_id position store action outcome reason found remaining attempts next_attempt_at verified_at updated_at",
        NotSearched("the case's own record"),
    ),
    table(
        "deletion_evidence",
        Nothing("stores, the names of the keys searched, counts and classes"),
        "id case_id store action outcome searched_by found deleted remaining detail started_at finished_at",
        NotSearched("the case's own record"),
    ),
    table(
        "uploads",
        Columns(&[("file_name", UPLOAD_GC), ("metadata", UPLOAD_GC)]),
        "id public_id owner_id storage_key upload_length upload_offset content_type sha256 expires_at created_at updated_at crc32 request_share_id sealing wrapped_key file_key_id multipart_id part_bytes digest_state",
        Steps("owner_id = {id}", &[Store::Uploads]),
    ),
    table(
        "upload_pieces",
        Nothing("object names and offsets"),
        "upload_id start_offset piece",
        Steps("upload_id IN ({uploads})", &[Store::Uploads]),
    ),
    table(
        "upload_parts",
        Nothing("offsets and the store's tags"),
        "upload_id start_offset e_tag",
        Steps("upload_id IN ({uploads})", &[Store::Uploads]),
    ),
    table(
        "sign_in_policy",
        Nothing("the team's two switches, and who set them last"),
        "id require_second_factor passwords_allowed updated_at updated_by",
        Steps("updated_by = {id}", &[Store::Account]),
    ),
    table(
        "totp_factors",
        Nothing("a sealed secret and times: a credential"),
        "user_id secret_sealed confirmed_at last_step created_at",
        Steps("user_id = {id}", &[Store::SignInMethods]),
    ),
    table(
        "recovery_codes",
        Nothing("hashes and times"),
        "id user_id code_hash used_at created_at",
        Steps("user_id = {id}", &[Store::SignInMethods]),
    ),
    table(
        "pending_sign_ins",
        Nothing("ids, a purpose and a time"),
        "session_id user_id purpose expires_at",
        Steps("user_id = {id}", &[Store::SignInMethods]),
    ),
    table(
        "sso_logins",
        Nothing("hashes, a sealed verifier and times"),
        "id session_id state_hash nonce_hash pkce_verifier created_at expires_at",
        NotSearched("it names no account: a browser's sign-in under way, gone with its session"),
    ),
    table(
        "passkeys",
        Columns(&[("name", WithAccount)]),
        "id user_id credential_id passkey created_at last_used_at",
        Steps("user_id = {id}", &[Store::SignInMethods]),
    ),
    table(
        "passkey_ceremonies",
        Nothing("a challenge's state and a time"),
        "session_id purpose user_id state expires_at",
        Steps("user_id = {id}", &[Store::SignInMethods]),
    ),
    table(
        "delivered_ranges",
        Nothing("byte ranges"),
        "id share_id first_byte end_byte position",
        Steps("share_id IN ({shares})", &[Store::Shares]),
    ),
    table(
        "handovers",
        Columns(&[("note_sealed", Cleared("destroyed once no share of the handover needs it"))]),
        "id sender_id created_at has_note allow_reply note_key",
        Steps("sender_id = {id}", &[Store::Notes, Store::Handovers]),
    ),
    table(
        "file_requests",
        Columns(&[("uploader_note", Sweep(ShareRetention))]),
        "handover_id max_files max_file_bytes max_total_bytes reply_to_share_id",
        Steps("handover_id IN ({handovers})", &[Store::Notes, Store::FileRequests]),
    ),
    table(
        "api_tokens",
        Columns(&[("name", WithAccount)]),
        "id user_id lookup_id token_hash scopes created_at expires_at last_used_at revoked_at revoked_by",
        Steps("user_id = {id} OR revoked_by = {id}", &[Store::ApiTokens, Store::Account]),
    ),
    table(
        "webhook_endpoints",
        Columns(&[("url", WithAccount)]),
        "id owner_id team event_types secret previous_secret previous_until enabled after_event_id after_share_id created_at",
        Steps("owner_id = {id}", &[Store::WebhookEndpoints]),
    ),
    table(
        "webhook_messages",
        Columns(&[("body", Sweep(WebhookMessages))]),
        "id endpoint_id source sender_id message_id event_type status attempts last_status last_error next_attempt_at claimed_at created_at delivered_at",
        Steps("sender_id = {id} OR endpoint_id IN ({endpoints})", &[Store::WebhookMessages]),
    ),
    table("webhook_cursors", Nothing("how far the dispatcher read"), "name last_id", NotSearched("it names no one")),
    table(
        "file_sealings",
        Nothing("storage keys"),
        "file_id plain_key sealed_key started_at",
        Steps("file_id IN ({files})", &[Store::FileRecords]),
    ),
    table(
        "file_key_record",
        Nothing("the id of the deployment's file key"),
        "id key_id",
        NotSearched("it names no one"),
    ),
    table(
        "_sqlx_migrations",
        Nothing("the migrations applied"),
        "version description installed_on success checksum execution_time",
        NotSearched("it names no one"),
    ),
];

/// The application's tables as the database lists them (not the engine's own).
async fn schema_tables(db: &Db) -> BTreeSet<String> {
    let names: Vec<String> = match db {
        Db::Sqlite(pool) => {
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .fetch_all(pool)
                .await
        }
        Db::Postgres(pool) => {
            sqlx::query_scalar(
                "SELECT table_name::text FROM information_schema.tables
                  WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
            )
            .fetch_all(pool)
            .await
        }
    }
    .unwrap();
    names.into_iter().collect()
}

async fn columns(db: &Db, table: &str) -> BTreeSet<String> {
    let names: Vec<String> = match db {
        Db::Sqlite(pool) => {
            sqlx::query_scalar("SELECT name FROM pragma_table_info($1)").bind(table).fetch_all(pool).await
        }
        Db::Postgres(pool) => {
            sqlx::query_scalar(
                "SELECT column_name::text FROM information_schema.columns
                  WHERE table_schema = current_schema() AND table_name = $1",
            )
            .bind(table)
            .fetch_all(pool)
            .await
        }
    }
    .unwrap();
    names.into_iter().collect()
}

/// The columns a table's entry names, each once, personal ones first.
fn classified_columns(table: &Table) -> Vec<&'static str> {
    let personal: Vec<&'static str> = match &table.personal {
        Columns(columns) => columns.iter().map(|(column, _)| *column).collect(),
        Nothing(why) => {
            assert!(!why.is_empty(), "{}: say why it holds nothing personal", table.name);
            Vec::new()
        }
    };
    personal.into_iter().chain(table.plain.split_whitespace()).collect()
}

/// A personal column's end must be one the app has: a sweep that runs, or a stated reason.
fn check_end(table: &str, column: &str, ends: &Ends) {
    match ends {
        Sweep(kind) => assert!(Kind::SWEEPS.contains(kind), "{table}.{column}: {kind:?} is not a sweep"),
        Gc(why) | Cleared(why) => assert!(!why.is_empty(), "{table}.{column}: say how it ends"),
        WithAccount => {}
    }
}

async fn every_table_and_column_is_classified_and_each_store_answers_for_a_table(backend: Backend) {
    let app = crate::support::TestApp::spawn(backend).await;
    let db = app.db();
    let schema = schema_tables(db).await;
    let listed: BTreeSet<String> = TABLES.iter().map(|t| t.name.to_owned()).collect();
    assert_eq!(listed.len(), TABLES.len(), "a table is listed twice");
    let unclassified: Vec<_> = schema.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&schema).collect();
    assert!(unclassified.is_empty(), "classify these tables in personal_data: {unclassified:?}");
    assert!(gone.is_empty(), "these listed tables are not in the schema: {gone:?}");

    for table in TABLES {
        let named = classified_columns(table);
        let listed: BTreeSet<String> = named.iter().map(|c| (*c).to_owned()).collect();
        assert_eq!(listed.len(), named.len(), "{}: a column is listed twice", table.name);
        let present = columns(db, table.name).await;
        let unclassified: Vec<_> = present.difference(&listed).collect();
        let gone: Vec<_> = listed.difference(&present).collect();
        assert!(unclassified.is_empty(), "{}: personal data or plain? {unclassified:?}", table.name);
        assert!(gone.is_empty(), "{}: not columns of the table: {gone:?}", table.name);
        if let Columns(personal) = &table.personal {
            assert!(!personal.is_empty(), "{}: no columns listed; say why it holds nothing personal", table.name);
            for (column, ends) in *personal {
                check_end(table.name, column, ends);
            }
        }
        match &table.sender {
            Steps(_, stores) => assert!(!stores.is_empty(), "{}: which step deletes a sender's rows?", table.name),
            NotSearched(why) => assert!(!why.is_empty(), "{}: say why a case does not search it", table.name),
        }
    }
    // Every store of a case that is a table answers for at least one table here.
    let named: HashSet<Store> = TABLES
        .iter()
        .filter_map(|t| if let Steps(_, s) = &t.sender { Some(*s) } else { None })
        .flatten()
        .copied()
        .collect();
    for store in Store::ORDER {
        let outside = matches!(store, Store::Logs | Store::Backups);
        assert!(outside || named.contains(&store), "no table says the {store:?} step deletes from it");
    }
}

both_backends!(every_table_and_column_is_classified_and_each_store_answers_for_a_table);
