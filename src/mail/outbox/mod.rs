//! The mail outbox: mails that must survive an SMTP outage (share notifications, download receipts)
//! are stored in `mail_outbox` first, then delivered by a worker with retries and capped backoff —
//! exactly once in normal operation, and never lost. One-time codes never come here: they are
//! worthless minutes later and keep being sent directly.
//!
//! Every state change is one conditional UPDATE (pending → sending → sent | pending | dead, or
//! pending → dropped for a share notification whose share was closed while it waited), so
//! any number of workers, in any number of app instances, may run at once. A row is claimed just
//! before it is sent, so a row is in 'sending' only while one SMTP conversation is in flight.
//!
//! The stored message of a share notification holds the share link (a secret token): it is
//! stored sealed with a key derived from the instance secret (see [`seal`]), and the UPDATE that
//! marks a row sent or dead also empties it.

use std::time::Duration;

use lettre::{Address, Message, address::Envelope};

mod delivery;
mod seal;

pub use delivery::run_outbox_worker;
pub use seal::{OutboxKey, Unreadable};

use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    metrics::Metrics,
    on_db, retry,
    secret::SecretKey,
    sql,
};

/// How often the worker looks for due mails.
pub const WORKER_INTERVAL: Duration = Duration::from_secs(5);
/// A row in 'sending' for longer than this was abandoned by a crashed worker: far longer than any
/// one send may take (WATASU_SMTP_TIMEOUT must be shorter).
pub const STUCK_AFTER: Duration = Duration::from_secs(10 * 60);
/// Rows one delivery pass of the worker handles.
const BATCH: u32 = 20;
/// Passes run back to back while they keep finding a full batch, up to this many per tick.
const MAX_PASSES_PER_TICK: u32 = 50;

crate::db_code! {
    /// What a stored mail is, kept in `mail_outbox.kind` for the dashboard.
    pub enum MailKind {
        ShareNotification = "share_notification",
        DownloadReceipt = "download_receipt",
        ShareLocked = "share_locked",
        Invitation = "invitation",
        WrongCodesWarning = "wrong_codes_warning",
        /// To a sender: the virus scan refused a file of their handover.
        ScanRefused = "scan_refused",
        /// A request's sender hears that the uploader's files arrived.
        FilesArrived = "files_arrived",
    }
}

crate::db_code! {
    /// Where a stored mail is: waiting, handed to the relay now, delivered, given up on, or not
    /// sent because the share it links to can no longer be downloaded.
    pub enum MailStatus { Pending = "pending", Sending = "sending", Sent = "sent", Dead = "dead", Dropped = "dropped" }
}

/// When failed deliveries are retried, and when the outbox gives up.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Wait after the first failure; doubles per failure…
    pub base: Duration,
    /// …up to this.
    pub cap: Duration,
    /// A row is 'dead' once this many attempts have failed (30 s doubling to 1 h: about 14 hours).
    pub max_attempts: u32,
    /// A row in 'sending' for longer than this was abandoned by a crashed worker ([`STUCK_AFTER`]).
    pub stuck_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(30),
            cap: Duration::from_secs(3600),
            max_attempts: 20,
            stuck_after: STUCK_AFTER,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error("an outbox mail has exactly one envelope recipient, this one has {0}")]
    NotOneRecipient(usize),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A row moved to 'sending' by this caller, with what is needed to send it.
#[derive(Clone, sqlx::FromRow)]
pub struct ClaimedMail {
    pub id: i64,
    /// Failed attempts before this one.
    pub attempts: i32,
    envelope_from: Option<String>,
    recipient: String,
    message: Vec<u8>,
}

impl std::fmt::Debug for ClaimedMail {
    // The message may hold a share link.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimedMail").field("id", &self.id).field("attempts", &self.attempts).finish_non_exhaustive()
    }
}

impl ClaimedMail {
    fn envelope(&self) -> Result<Envelope, lettre::error::Error> {
        let from = self.envelope_from.as_deref().map(str::parse::<Address>).transpose();
        let to = self.recipient.parse::<Address>();
        match (from, to) {
            (Ok(from), Ok(to)) => Envelope::new(from, vec![to]),
            _ => Err(lettre::error::Error::MissingTo),
        }
    }
}

/// What became of one delivery attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Sent,
    /// Failed; back to 'pending' until its backoff ends.
    Retrying {
        error_class: String,
    },
    /// Failed for the last time allowed.
    Dead {
        error_class: String,
    },
    /// Not sent: the share it links to was revoked, expired, downloaded or purged meanwhile.
    Dropped,
}

impl Outcome {
    /// The `result` label of the deliveries metric.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Retrying { .. } => "retrying",
            Self::Dead { .. } => "dead",
            Self::Dropped => "dropped",
        }
    }
}

/// What one delivery pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub sent: u32,
    /// Failed and waiting for a retry.
    pub failed: u32,
    /// Failed for the last time.
    pub dead: u32,
    /// Not sent, their share closed meanwhile.
    pub dropped: u32,
}

impl DeliveryReport {
    fn count(&mut self, outcome: &Outcome) {
        let counter = match outcome {
            Outcome::Sent => &mut self.sent,
            Outcome::Retrying { .. } => &mut self.failed,
            Outcome::Dead { .. } => &mut self.dead,
            Outcome::Dropped => &mut self.dropped,
        };
        *counter += 1;
    }

    pub fn attempted(&self) -> u32 {
        self.sent + self.failed + self.dead + self.dropped
    }
}

/// One stored mail as the sender's dashboard shows it: no addresses, no content.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct MailDelivery {
    pub id: i64,
    pub kind: MailKind,
    pub status: MailStatus,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub next_attempt_at: Timestamp,
    pub sent_at: Option<Timestamp>,
}

const ENQUEUE: Sql = Sql::same(
    "INSERT INTO mail_outbox (share_id, kind, envelope_from, recipient, subject, message)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
);
/// A share notification waits while a file of its handover waits for the virus scan (see
/// `scan`): it is not due, and leaves once the last file is released. A request's link mail
/// never waits: its files are held from the sender, not from the uploader.
const DUE_IDS: Sql = sql!(
    "SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= " now "
        AND NOT EXISTS (SELECT 1 FROM shares s JOIN files f ON f.handover_id = s.handover_id
                         WHERE s.id = mail_outbox.share_id AND mail_outbox.kind = 'share_notification'
                           AND s.kind = 'delivery' AND f.scan_state = 'pending')
      ORDER BY next_attempt_at, id LIMIT $1"
);
/// A share notification is worth sending only while its share can be downloaded: active and
/// unexpired (revoking sets `expires_at` to now). A share row deleted outright leaves `share_id`
/// NULL, like a mail queued without a share, and is not judged here.
const DROP_IF_SHARE_CLOSED: Sql = sql!(
    "UPDATE mail_outbox SET status = 'dropped', message = " { sqlite: "X''", postgres: "''::bytea" } ", claimed_at = NULL
      WHERE id = $1 AND status = 'pending' AND kind = 'share_notification'
        AND EXISTS (SELECT 1 FROM shares s WHERE s.id = mail_outbox.share_id
                       AND (s.status <> 'active' OR s.expires_at <= " now "))"
);
/// Never a share notification while a file of its handover is not released by the virus scan:
/// pending, or refused (its share ends next, and the mail is dropped).
const CLAIM: Sql = sql!(
    "UPDATE mail_outbox SET status = 'sending', claimed_at = " now "
      WHERE id = $1 AND status = 'pending' AND next_attempt_at <= " now "
        AND NOT EXISTS (SELECT 1 FROM shares s JOIN files f ON f.handover_id = s.handover_id
                         WHERE s.id = mail_outbox.share_id AND mail_outbox.kind = 'share_notification'
                           AND s.kind = 'delivery' AND f.scan_state IN ('pending', 'infected', 'refused'))
      RETURNING id, attempts, envelope_from, recipient, message"
);
/// The empty body is spelled `X''` on SQLite and `''::bytea` on PostgreSQL.
const MARK_SENT: Sql = sql!(
    "UPDATE mail_outbox
        SET status = 'sent', sent_at = " now ", message = " { sqlite: "X''", postgres: "''::bytea" } ",
            last_error = NULL, claimed_at = NULL
      WHERE id = $1 AND status <> 'sent'"
);
/// SET expressions read the row as it was before the UPDATE: `attempts` is the old count.
const MARK_FAILED: Sql = sql!(
    "UPDATE mail_outbox
        SET status = CASE WHEN attempts + 1 >= $3 THEN 'dead' ELSE 'pending' END,
            message = CASE WHEN attempts + 1 >= $3 THEN " { sqlite: "X''", postgres: "''::bytea" } " ELSE message END,
            attempts = attempts + 1, last_error = $2, claimed_at = NULL,
            next_attempt_at = " now " + " secs("$4") "
      WHERE id = $1 AND status = 'sending'
      RETURNING status"
);
const RECOVER_STUCK: Sql = sql!(
    "UPDATE mail_outbox
        SET status = CASE WHEN attempts + 1 >= $2 THEN 'dead' ELSE 'pending' END,
            message = CASE WHEN attempts + 1 >= $2 THEN " { sqlite: "X''", postgres: "''::bytea" } " ELSE message END,
            attempts = attempts + 1, last_error = 'interrupted', claimed_at = NULL,
            next_attempt_at = " now "
      WHERE status = 'sending' AND claimed_at <= " now " - " secs("$1")
);
/// A send given up at shutdown: due again at once, no attempt counted (the relay never answered).
const RELEASE: Sql =
    Sql::same("UPDATE mail_outbox SET status = 'pending', claimed_at = NULL WHERE id = $1 AND status = 'sending'");
const DELIVERY_STATE: Sql = Sql::same(
    "SELECT id, kind, status, attempts, last_error, created_at, next_attempt_at, sent_at
       FROM mail_outbox WHERE share_id = $1 ORDER BY id",
);

/// Mails still to go out: waiting for their turn or being handed to the relay now.
const WAITING: Sql = Sql::same("SELECT COUNT(*) FROM mail_outbox WHERE status IN ('pending', 'sending')");

#[derive(Clone, Debug)]
pub struct Outbox {
    db: Db,
    policy: RetryPolicy,
    key: OutboxKey,
    /// Counts delivery attempts by result.
    metrics: Metrics,
    /// Cancelled when the server's shutdown grace is over: a send still waiting for the relay is
    /// given up and its row put back (shared by every clone).
    abandon: tokio_util::sync::CancellationToken,
}

impl Outbox {
    /// The outbox of the instance whose secret key is `secret` (it seals and opens the bodies).
    pub fn new(db: Db, secret: &SecretKey) -> Self {
        Self::with_policy(db, secret, RetryPolicy::default())
    }

    pub fn with_policy(db: Db, secret: &SecretKey, policy: RetryPolicy) -> Self {
        Self { db, policy, key: OutboxKey::derive(secret), metrics: Metrics::disabled(), abandon: Default::default() }
    }

    /// Counts this outbox's delivery attempts in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// How many mails are still to go out (the queue's depth).
    pub async fn waiting(&self) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&WAITING)).fetch_one(pool).await)
    }

    /// Stores a finished message (bytes and envelope) as due now; returns its outbox id.
    pub async fn enqueue(&self, share_id: Option<i64>, kind: MailKind, message: &Message) -> Result<i64, EnqueueError> {
        let envelope = message.envelope();
        let [recipient] = envelope.to() else { return Err(EnqueueError::NotOneRecipient(envelope.to().len())) };
        let from = envelope.from().map(ToString::to_string);
        let subject = message.headers().get_raw("Subject").unwrap_or_default();
        let (kind, recipient) = (kind.code(), recipient.to_string());
        let raw = self.key.seal(&recipient, &message.formatted());
        Ok(on_db!(&self.db, |pool| {
            let query = sqlx::query_scalar(pool.sql(&ENQUEUE)).bind(share_id).bind(kind).bind(from).bind(recipient);
            // Every row read: a mail reported queued is stored (see `db::written_row`).
            let ids = query.bind(subject).bind(raw).fetch_all(pool).await?;
            crate::db::one_written_row(ids)?
        }))
    }

    /// Ids of due pending rows, oldest due first (served by the partial index on pending rows).
    async fn due_ids(&self, limit: u32) -> Result<Vec<i64>, sqlx::Error> {
        let limit = i64::from(limit);
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&DUE_IDS)).bind(limit).fetch_all(pool).await)
    }

    /// pending → sending for one due row; `None` when another worker got it first (or it is not due).
    pub async fn claim(&self, id: i64) -> Result<Option<ClaimedMail>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&CLAIM)).bind(id).fetch_all(pool).await.map(crate::db::written_row)
        })
    }

    /// pending → dropped for a share notification whose share was closed while it waited; true
    /// when this row was dropped. Run just before `claim`, so a mail is never sent for a share
    /// closed before its turn (one closed during the send is, as if it had been sent a moment
    /// earlier).
    pub async fn drop_if_share_closed(&self, id: i64) -> Result<bool, sqlx::Error> {
        let dropped = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DROP_IF_SHARE_CLOSED)).bind(id).execute(pool).await?.rows_affected()
        });
        if dropped == 1 {
            self.metrics.mail_delivery(Outcome::Dropped.label());
        }
        Ok(dropped == 1)
    }

    /// Claims up to `limit` due rows, one conditional UPDATE each: a row another worker claimed
    /// in the meantime is simply not returned.
    pub async fn claim_due(&self, limit: u32) -> Result<Vec<ClaimedMail>, sqlx::Error> {
        let mut claimed = Vec::new();
        for id in self.due_ids(limit).await? {
            claimed.extend(self.claim(id).await?);
        }
        Ok(claimed)
    }

    /// The relay accepted the message: mark it sent and drop the body (it may hold a share link).
    /// Also from 'pending' or 'dead': a row taken back from a worker that was merely slow, not
    /// dead, was delivered after all, and saying so spares the recipient a second copy.
    pub async fn mark_sent(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done =
            on_db!(&self.db, |pool| sqlx::query(pool.sql(&MARK_SENT)).bind(id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    /// A claimed row failed: back to 'pending' after min(base × 2^attempts, cap), or 'dead' when
    /// this was the last attempt allowed. Returns the new status (`None`: the row was not ours).
    /// `error_class` is stored: a short class such as "smtp 421", never reply text or addresses.
    pub async fn mark_failed(&self, mail: &ClaimedMail, error_class: &str) -> Result<Option<String>, sqlx::Error> {
        let RetryPolicy { base, cap, max_attempts, .. } = self.policy;
        let max_attempts = i32::try_from(max_attempts).unwrap_or(i32::MAX);
        let wait = seconds(retry::backoff(base, u32::try_from(mail.attempts).unwrap_or(0), cap));
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&MARK_FAILED))
                .bind(mail.id)
                .bind(error_class)
                .bind(max_attempts)
                .bind(wait)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)
        })
    }

    /// Takes back rows left in 'sending' longer than `stuck_after` by a worker that crashed (or
    /// whose process was killed) mid-send; they count one attempt and are due at once. The relay
    /// may have accepted such a mail before the crash, so the recipient may get it twice: a
    /// duplicate notification is preferable to a lost one. Returns how many rows were taken back.
    pub async fn recover_stuck(&self) -> Result<u64, sqlx::Error> {
        let stuck_after = seconds(self.policy.stuck_after);
        let max_attempts = i32::try_from(self.policy.max_attempts).unwrap_or(i32::MAX);
        Ok(on_db!(&self.db, |pool| {
            let query = sqlx::query(pool.sql(&RECOVER_STUCK)).bind(stuck_after).bind(max_attempts);
            query.execute(pool).await?.rows_affected()
        }))
    }

    /// sending → pending for a row this process claimed and stopped sending.
    async fn release(&self, id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&RELEASE)).bind(id).execute(pool).await.map(drop))
    }

    /// The mails of one share, oldest first, for the sender's dashboard.
    pub async fn delivery_state(&self, share_id: i64) -> Result<Vec<MailDelivery>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&DELIVERY_STATE)).bind(share_id).fetch_all(pool).await)
    }
}
