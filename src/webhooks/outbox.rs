//! The webhook messages: stored once per endpoint and source, then waiting for or done with
//! delivery. Every state change is one conditional UPDATE (pending → sending → delivered |
//! pending | dead, or pending → dropped), so any number of workers in any number of instances
//! may run at once, as in the mail outbox.

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, Timestamp, written_row},
    on_db, sql,
};

use super::{EventType, send::ATTEMPT_DEADLINE};

/// A message in 'sending' for longer than this, by the database's clock, was left by a process
/// that stopped mid-attempt, and is taken back: no attempt outlives [`ATTEMPT_DEADLINE`], and
/// the margin covers the statements that claim and mark it around the attempt.
pub const RECLAIM_AFTER: Duration = Duration::from_secs(ATTEMPT_DEADLINE.as_secs() + 10);

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

/// Once per endpoint and source, whichever instance comes first.
const ENQUEUE: &str = "INSERT INTO webhook_messages (endpoint_id, source, sender_id, message_id, event_type, body)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (endpoint_id, source) DO NOTHING";

/// Endpoints with a message due, the longest overdue first; not one with an attempt in flight,
/// which holds only itself.
const DUE_ENDPOINTS: Sql = sql!(
    "SELECT endpoint_id FROM webhook_messages
      WHERE status = 'pending' AND next_attempt_at <= " now "
        AND endpoint_id NOT IN (SELECT endpoint_id FROM webhook_messages WHERE status = 'sending')
      GROUP BY endpoint_id ORDER BY min(next_attempt_at), endpoint_id LIMIT $1"
);
/// One endpoint's due messages in the order they are sent: the longest overdue first.
const DUE_OF_ENDPOINT: Sql = sql!(
    "SELECT id FROM webhook_messages WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at <= " now "
      ORDER BY next_attempt_at, id LIMIT $2"
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
    "UPDATE webhook_messages SET status = 'pending', attempts = attempts + 1, last_error = $2,
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

/// The messages table.
#[derive(Clone, Debug)]
pub struct Messages {
    db: Db,
}

impl Messages {
    pub fn new(db: Db) -> Self {
        Self { db }
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

    /// Up to `limit` endpoints with a message due and none being sent.
    pub async fn due_endpoints(&self, limit: i64) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&DUE_ENDPOINTS)).bind(limit).fetch_all(pool).await)
    }

    /// Up to `limit` of the endpoint's due messages, in the order they go out.
    pub async fn due_of_endpoint(&self, endpoint_id: i64, limit: i64) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&DUE_OF_ENDPOINT)).bind(endpoint_id).bind(limit).fetch_all(pool).await
        })
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
        wait: Duration,
        give_up: Duration,
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

    /// Takes back the messages left in 'sending' for longer than [`RECLAIM_AFTER`] by the
    /// database's clock (their process stopped mid-attempt): due again now, the attempt counted
    /// as failed.
    pub async fn recover_stuck(&self) -> Result<u64, sqlx::Error> {
        let after = crate::db::seconds(RECLAIM_AFTER);
        let why = format!("interrupted: no result within {} s", RECLAIM_AFTER.as_secs());
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&RECOVER_STUCK)).bind(after).bind(&why).execute(pool).await?.rows_affected()
        });
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
