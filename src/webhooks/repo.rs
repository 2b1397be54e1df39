//! The webhook tables: endpoints (their secrets sealed with the row id), the messages waiting for
//! or done with delivery, and the dispatcher's cursors. Every state change of a message is one
//! conditional UPDATE (pending → sending → delivered | pending | dead, or pending → dropped), so
//! any number of workers in any number of instances may run at once, as in the mail outbox.

use crate::{
    db::{Db, Dialect, Sql, Timestamp, one_written_row, written_row},
    on_db,
    row_seal::RowSeal,
    secret::SecretKey,
    share::EventKind,
    sql,
};

use super::{EventType, payload::FileFacts, signing::WebhookSecret};

/// The sender `u` may not be heard of: disabled, or a deletion case not completed is open on them.
macro_rules! barred {
    () => {
        "(u.disabled_at IS NOT NULL OR EXISTS (SELECT 1 FROM deletion_cases d
            WHERE d.subject_id = u.id AND d.state <> 'completed'))"
    };
}

/// A message that may not go out: its share's sender is barred, or its endpoint is disabled or
/// belongs to someone barred. Checked when it is claimed, so it is never sent, and to drop it.
macro_rules! unsendable {
    () => {
        concat!(
            "(EXISTS (SELECT 1 FROM users u WHERE u.id = webhook_messages.sender_id AND ",
            barred!(),
            ") OR EXISTS (SELECT 1 FROM webhook_endpoints w JOIN users u ON u.id = w.owner_id
                 WHERE w.id = webhook_messages.endpoint_id AND (w.enabled = FALSE OR ",
            barred!(),
            ")))"
        )
    };
}

/// One statement around the database clock, which `sql!` cannot combine with `unsendable!`.
macro_rules! claim {
    ($now:literal) => {
        concat!(
            "UPDATE webhook_messages SET status = 'sending', claimed_at = ",
            $now,
            " WHERE id = $1 AND status = 'pending' AND next_attempt_at <= ",
            $now,
            " AND NOT ",
            unsendable!(),
            " RETURNING id, endpoint_id, message_id, body, attempts"
        )
    };
}

/// What an [`Endpoint`] reads, for the statements that pick endpoints.
macro_rules! endpoint_columns {
    () => {
        "SELECT w.id, w.owner_id, w.team, w.url, w.event_types, w.enabled,
                w.after_event_id, w.after_share_id, w.created_at FROM webhook_endpoints w"
    };
}

const SEAL_PURPOSE: &str = "webhook endpoint secret v1";

const INSERT_ENDPOINT: Sql = Sql::same(
    "INSERT INTO webhook_endpoints (owner_id, team, url, event_types, secret, after_event_id, after_share_id)
     VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(id), 0) FROM share_events), (SELECT coalesce(max(id), 0) FROM shares))
     RETURNING id",
);
const SET_SECRET: Sql = Sql::same("UPDATE webhook_endpoints SET secret = $2 WHERE id = $1");
const OF_OWNER: &str = concat!(endpoint_columns!(), " WHERE w.owner_id = $1 ORDER BY w.id");
const ONE: &str = concat!(endpoint_columns!(), " WHERE w.id = $1 AND w.owner_id = $2");
/// Endpoints that hear of new messages: enabled, of someone not barred, and a team endpoint only
/// while its owner is an admin.
const LISTENING: &str = concat!(
    endpoint_columns!(),
    " JOIN users u ON u.id = w.owner_id WHERE w.enabled = TRUE AND (w.team = FALSE OR u.role = 'admin') AND NOT ",
    barred!()
);
const DELETE: &str = "DELETE FROM webhook_endpoints WHERE id = $1 AND owner_id = $2";
const SET_ENABLED: &str = "UPDATE webhook_endpoints SET enabled = $3 WHERE id = $1 AND owner_id = $2";
/// The current secret becomes the previous one, which still signs for the overlap.
const ROTATE: Sql = sql!(
    "UPDATE webhook_endpoints SET previous_secret = secret, previous_until = " now " + " secs("$3") ", secret = $4
      WHERE id = $1 AND owner_id = $2"
);
const SIGNING: Sql = sql!(
    "SELECT url, secret, previous_secret, COALESCE(previous_until > " now ", FALSE) AS previous_live
       FROM webhook_endpoints WHERE id = $1"
);

const EVENT_CANDIDATES: &str = concat!(
    "SELECT e.id AS source_id, e.kind AS event_kind, e.at, e.file_position, s.id AS share_id, s.handover_id,
            s.sender_id, s.recipient_email AS recipient, s.kind AS share_kind, ",
    barred!(),
    " AS barred
       FROM share_events e JOIN shares s ON s.id = e.share_id JOIN users u ON u.id = s.sender_id
      WHERE e.id > $1 ORDER BY e.id LIMIT $2"
);
const SHARE_CANDIDATES: &str = concat!(
    "SELECT s.id AS source_id, CAST(NULL AS TEXT) AS event_kind, s.created_at AS at,
            CAST(NULL AS INTEGER) AS file_position, s.id AS share_id, s.handover_id,
            s.sender_id, s.recipient_email AS recipient, s.kind AS share_kind, ",
    barred!(),
    " AS barred
       FROM shares s JOIN users u ON u.id = s.sender_id
      WHERE s.id > $1 ORDER BY s.id LIMIT $2"
);
const FILES: &str = "SELECT original_name AS name, size_bytes AS size, sha256, position
                       FROM files WHERE handover_id = $1 ORDER BY position";
const CURSOR: &str = "SELECT last_id FROM webhook_cursors WHERE name = $1";
/// Only forward: an instance that read less than another never moves the cursor back.
const ADVANCE: &str = "UPDATE webhook_cursors SET last_id = $2 WHERE name = $1 AND last_id < $2";
/// Once per endpoint and source, whichever instance comes first.
const ENQUEUE: &str = "INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (endpoint_id, source) DO NOTHING";

const DUE_IDS: Sql = sql!(
    "SELECT id FROM webhook_messages WHERE status = 'pending' AND next_attempt_at <= " now "
      ORDER BY next_attempt_at, id LIMIT $1"
);
const DROP_UNSENDABLE: &str = concat!(
    "UPDATE webhook_messages SET status = 'dropped', claimed_at = NULL WHERE id = $1 AND status = 'pending' AND ",
    unsendable!()
);
const CLAIM: Sql = Sql { sqlite: claim!("unixepoch('subsec')"), postgres: claim!("now()") };
const MARK_DELIVERED: Sql = sql!(
    "UPDATE webhook_messages SET status = 'delivered', delivered_at = " now ", last_status = $2,
            last_error = NULL, claimed_at = NULL
      WHERE id = $1 AND status <> 'delivered'"
);
/// Given up once the message is older than the give-up age, else due again after `$4` seconds.
const MARK_FAILED: Sql = sql!(
    "UPDATE webhook_messages
        SET status = CASE WHEN created_at <= " now " - " secs("$5") " THEN 'dead' ELSE 'pending' END,
            attempts = attempts + 1, last_status = $2, last_error = $3, claimed_at = NULL,
            next_attempt_at = " now " + " secs("$4") "
      WHERE id = $1 AND status = 'sending'
      RETURNING status"
);
const RECOVER_STUCK: Sql = sql!(
    "UPDATE webhook_messages SET status = 'pending', attempts = attempts + 1, last_error = 'interrupted',
            claimed_at = NULL, next_attempt_at = " now "
      WHERE status = 'sending' AND claimed_at <= " now " - " secs("$1")
);
const LOG: &str = "SELECT id, message_id, event_type, status, attempts, last_status, last_error,
                          created_at, next_attempt_at, delivered_at
                     FROM webhook_messages WHERE endpoint_id = $1 ORDER BY id DESC LIMIT $2";

crate::db_code! {
    /// Where a message is.
    pub enum MessageStatus {
        Pending = "pending",
        Sending = "sending",
        Delivered = "delivered",
        /// Failed for longer than the give-up age.
        Dead = "dead",
        /// Not sent: the endpoint was disabled, or the share's sender disabled or being deleted.
        Dropped = "dropped",
    }
}

/// A registered endpoint (never its secret).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Endpoint {
    pub id: i64,
    pub owner_id: i64,
    /// Hears about every share of the team (an admin's endpoint), not only its owner's.
    pub team: bool,
    pub url: String,
    event_types: String,
    pub enabled: bool,
    after_event_id: i64,
    after_share_id: i64,
    pub created_at: Timestamp,
}

impl Endpoint {
    pub fn event_types(&self) -> Vec<EventType> {
        EventType::split(&self.event_types)
    }

    /// Whether a fact of `sender_id`'s share, from `source` ([`Source`]) at `source_id`, is news to
    /// this endpoint: one of its events, about a share it hears of, and after it was registered.
    pub fn hears(&self, event: EventType, sender_id: i64, source: Source, source_id: i64) -> bool {
        let after = match source {
            Source::Events => self.after_event_id,
            Source::Shares => self.after_share_id,
        };
        source_id > after
            && (self.team || self.owner_id == sender_id)
            && self.event_types.split(' ').any(|c| c == event.code())
    }
}

/// What the dispatcher follows by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The share timeline (`share_events`).
    Events,
    /// New shares (`shares`), for `share.created`.
    Shares,
}

impl Source {
    /// The cursor's name, and the prefix of a message's source key.
    pub fn name(self) -> &'static str {
        match self {
            Self::Events => "share_events",
            Self::Shares => "shares",
        }
    }
}

/// A timeline event or a new share the dispatcher reads.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Candidate {
    pub source_id: i64,
    /// The timeline event; `None` for a new share.
    pub event_kind: Option<EventKind>,
    pub at: Timestamp,
    pub file_position: Option<i32>,
    pub share_id: i64,
    pub handover_id: i64,
    pub sender_id: i64,
    pub recipient: String,
    pub share_kind: String,
    /// The sender is disabled or being deleted: nothing is made for this.
    pub barred: bool,
}

/// A message being sent by this caller.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ClaimedMessage {
    pub id: i64,
    pub endpoint_id: i64,
    pub message_id: String,
    pub body: String,
    /// Failed attempts before this one.
    pub attempts: i32,
}

/// Where and how to sign one endpoint's messages now.
#[derive(Clone, Debug)]
pub struct Signing {
    pub url: String,
    /// The current secret first, then the previous one during a rotation's overlap.
    pub secrets: Vec<WebhookSecret>,
}

#[derive(sqlx::FromRow)]
struct SigningRow {
    url: String,
    secret: Vec<u8>,
    previous_secret: Option<Vec<u8>>,
    previous_live: bool,
}

/// One message as the endpoint's delivery log shows it: no body.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LogEntry {
    pub id: i64,
    pub message_id: String,
    pub event_type: EventType,
    pub status: MessageStatus,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub next_attempt_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
}

/// What a failed attempt stores.
#[derive(Clone, Debug)]
pub struct Failure {
    pub status: Option<i32>,
    /// A short class ("http 500", "timeout", "refused address 10.0.0.1"), never a response body.
    pub error: String,
}

#[derive(Clone, Debug)]
pub struct WebhookRepo {
    db: Db,
    seal: RowSeal,
}

impl WebhookRepo {
    pub fn new(db: Db, secret: &SecretKey) -> Self {
        Self { db, seal: RowSeal::derive(secret, SEAL_PURPOSE) }
    }

    /// Stores a new endpoint with its secret sealed; answers its id.
    pub async fn insert(
        &self,
        owner_id: i64,
        team: bool,
        url: &str,
        types: &[EventType],
        secret: &WebhookSecret,
    ) -> Result<i64, sqlx::Error> {
        let types = EventType::join(types);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let ids = sqlx::query_scalar(pool.sql(&INSERT_ENDPOINT))
                .bind(owner_id)
                .bind(team)
                .bind(url)
                .bind(&types)
                .bind(Vec::<u8>::new())
                .fetch_all(&mut *tx)
                .await?;
            let id: i64 = one_written_row(ids)?;
            let sealed = self.seal.seal(id, secret.expose().as_bytes());
            sqlx::query(pool.sql(&SET_SECRET)).bind(id).bind(sealed).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(id)
        })
    }

    pub async fn of_owner(&self, owner_id: i64) -> Result<Vec<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(OF_OWNER).bind(owner_id).fetch_all(pool).await)
    }

    pub async fn one(&self, id: i64, owner_id: i64) -> Result<Option<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(ONE).bind(id).bind(owner_id).fetch_optional(pool).await)
    }

    pub async fn listening(&self) -> Result<Vec<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(LISTENING).fetch_all(pool).await)
    }

    /// True when the owner's endpoint was there and is gone (its messages with it).
    pub async fn delete(&self, id: i64, owner_id: i64) -> Result<bool, sqlx::Error> {
        let done =
            on_db!(&self.db, |pool| sqlx::query(DELETE).bind(id).bind(owner_id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    pub async fn set_enabled(&self, id: i64, owner_id: i64, enabled: bool) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(SET_ENABLED).bind(id).bind(owner_id).bind(enabled).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Makes `secret` the endpoint's secret; the one before still signs for `overlap`.
    pub async fn rotate(
        &self,
        id: i64,
        owner_id: i64,
        secret: &WebhookSecret,
        overlap: std::time::Duration,
    ) -> Result<bool, sqlx::Error> {
        let sealed = self.seal.seal(id, secret.expose().as_bytes());
        let overlap = crate::db::seconds(overlap);
        let done = on_db!(&self.db, |pool| {
            let query = sqlx::query(pool.sql(&ROTATE)).bind(id).bind(owner_id).bind(overlap).bind(sealed);
            query.execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// The endpoint's address and the secrets that sign now; `None` when the endpoint is gone or
    /// its secret does not open (the instance's secret key changed).
    pub async fn signing(&self, endpoint_id: i64) -> Result<Option<Signing>, sqlx::Error> {
        let row: Option<SigningRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&SIGNING)).bind(endpoint_id).fetch_optional(pool).await?
        });
        let Some(row) = row else { return Ok(None) };
        let open = |sealed: &[u8]| {
            let plain = self.seal.open(endpoint_id, sealed)?;
            WebhookSecret::parse(std::str::from_utf8(&plain).ok()?)
        };
        let Some(current) = open(&row.secret) else { return Ok(None) };
        let previous = row.previous_secret.filter(|_| row.previous_live).and_then(|sealed| open(&sealed));
        Ok(Some(Signing { url: row.url, secrets: [Some(current), previous].into_iter().flatten().collect() }))
    }

    /// Up to `limit` facts of `source` after `after`, oldest first.
    pub async fn candidates(&self, source: Source, after: i64, limit: i64) -> Result<Vec<Candidate>, sqlx::Error> {
        let statement = match source {
            Source::Events => EVENT_CANDIDATES,
            Source::Shares => SHARE_CANDIDATES,
        };
        on_db!(&self.db, |pool| sqlx::query_as(statement).bind(after).bind(limit).fetch_all(pool).await)
    }

    pub async fn files(&self, handover_id: i64) -> Result<Vec<FileFacts>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(FILES).bind(handover_id).fetch_all(pool).await)
    }

    pub async fn cursor(&self, source: Source) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(CURSOR).bind(source.name()).fetch_one(pool).await)
    }

    pub async fn advance(&self, source: Source, to: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(ADVANCE).bind(source.name()).bind(to).execute(pool).await.map(drop))
    }

    /// Stores a message unless the endpoint has one for `source_key` already; true when stored.
    pub async fn enqueue(
        &self,
        endpoint_id: i64,
        source_key: &str,
        sender_id: i64,
        event: EventType,
        body: &str,
    ) -> Result<bool, sqlx::Error> {
        let message_id = new_message_id();
        let done = on_db!(&self.db, |pool| {
            let query = sqlx::query(ENQUEUE).bind(endpoint_id).bind(source_key).bind(sender_id);
            query.bind(message_id).bind(event).bind(body).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    pub async fn due_ids(&self, limit: i64) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&DUE_IDS)).bind(limit).fetch_all(pool).await)
    }

    /// pending → dropped for a message that may not go out; true when this one was dropped.
    pub async fn drop_unsendable(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(DROP_UNSENDABLE).bind(id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    /// pending → sending for a due message that may go out; `None` when another worker has it.
    pub async fn claim(&self, id: i64) -> Result<Option<ClaimedMessage>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&CLAIM)).bind(id).fetch_all(pool).await.map(written_row))
    }

    pub async fn mark_delivered(&self, id: i64, status: u16) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&MARK_DELIVERED)).bind(id).bind(i32::from(status)).execute(pool).await.map(drop)
        })
    }

    /// sending → pending (due after `wait`) or dead (older than `give_up`); the new status.
    pub async fn mark_failed(
        &self,
        id: i64,
        failure: &Failure,
        wait: std::time::Duration,
        give_up: std::time::Duration,
    ) -> Result<Option<MessageStatus>, sqlx::Error> {
        let (wait, give_up) = (crate::db::seconds(wait), crate::db::seconds(give_up));
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&MARK_FAILED))
                .bind(id)
                .bind(failure.status)
                .bind(&failure.error)
                .bind(wait)
                .bind(give_up)
                .fetch_all(pool)
                .await
                .map(written_row)
        })
    }

    /// Takes back messages a crashed worker left in 'sending' for longer than `stuck_after`.
    pub async fn recover_stuck(&self, stuck_after: std::time::Duration) -> Result<u64, sqlx::Error> {
        let stuck_after = crate::db::seconds(stuck_after);
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&RECOVER_STUCK))
            .bind(stuck_after)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done)
    }

    /// The endpoint's latest `limit` messages, newest first.
    pub async fn log(&self, endpoint_id: i64, limit: i64) -> Result<Vec<LogEntry>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(LOG).bind(endpoint_id).bind(limit).fetch_all(pool).await)
    }
}

/// A `webhook-id`: `msg_` and 128 random bits, made once per message and kept across retries.
fn new_message_id() -> String {
    let mut bytes = [0u8; 16];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
    format!("msg_{}", hex::encode(bytes))
}
