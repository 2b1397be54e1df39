//! The stores a sender's data lives in, in the order their steps run, and the database adapter:
//! for each store, the key it is searched by and the statements that count and delete by it.
//!
//! The order keeps the keys needed to find the rest until the end: access first (sessions, API
//! tokens, sign-in methods, invitations), then everything found through the sender's shares, then
//! the shares, what hangs on the handovers (their notes, the file requests), the webhook messages
//! and endpoints, the sender's resumable uploads (their bytes, then their rows), the files on disk
//! (found through the file rows), the file rows, the handovers they belonged to, and the account
//! row last. The address used as a key is read from the account row each time, so it is needed
//! nowhere else. A store the account row would take along by cascade is a step all the same, so
//! that the evidence says it was searched and found empty.

use crate::{
    db::{Db, Dialect, Sql},
    on_db,
};

crate::db_code! {
    /// A place that can hold a sender's data.
    pub enum Store {
        Sessions = "sessions",
        /// Personal API tokens (revoked when the case opened; their rows and labels go here).
        ApiTokens = "api_tokens",
        /// Second factors and passkeys, and sign-ins waiting for one.
        SignInMethods = "sign_in_methods",
        Invitations = "invitations",
        Codes = "codes",
        Grants = "grants",
        DeliveredMail = "delivered_mail",
        Outbox = "mail_outbox",
        ShareEvents = "share_events",
        RateLimits = "rate_limits",
        Shares = "shares",
        /// The sealed notes of the sender's handovers and the notes uploaders left on their requests.
        Notes = "notes",
        /// The sender's file requests and replies (their limits and what answers which share).
        FileRequests = "file_requests",
        /// Messages about the sender's shares, and every message for the sender's endpoints.
        WebhookMessages = "webhook_messages",
        /// The endpoints the sender registered, with their sealed signing secrets.
        WebhookEndpoints = "webhook_endpoints",
        /// Resumable uploads not (yet) made into shares: their bytes and rows.
        Uploads = "uploads",
        /// The data keys of the sender's encrypted files, destroyed before their bytes go: from
        /// then on no copy of those bytes (a backup, an object version) can be read.
        FileKeys = "file_keys",
        StoredFiles = "stored_files",
        FileRecords = "file_records",
        /// What the sender handed over in one go, once its shares and files are gone.
        Handovers = "handovers",
        Logs = "logs",
        Backups = "backups",
        Account = "account",
    }
}

crate::db_code! {
    /// What a step does to its store.
    pub enum Action {
        Delete = "delete",
        Anonymise = "anonymise",
        /// Kept, for the documented reason the step names.
        Retain = "retain",
    }
}

crate::db_code! {
    /// What became of a step.
    pub enum Outcome {
        Pending = "pending",
        Deleted = "deleted",
        /// Searched by the right key, and nothing was there.
        NotFound = "not_found",
        Retryable = "retryable",
        NeedsReview = "needs_review",
        DocumentedConstraint = "documented_constraint",
    }
}

impl Outcome {
    /// Nothing more to do in this store.
    pub fn is_done(self) -> bool {
        matches!(self, Self::Deleted | Self::NotFound | Self::DocumentedConstraint)
    }
}

impl Store {
    /// Every store, in run order.
    pub const ORDER: [Store; 23] = [
        Self::Sessions,
        Self::ApiTokens,
        Self::SignInMethods,
        Self::Invitations,
        Self::Codes,
        Self::Grants,
        Self::DeliveredMail,
        Self::Outbox,
        Self::ShareEvents,
        Self::RateLimits,
        Self::Shares,
        Self::Notes,
        Self::FileRequests,
        Self::WebhookMessages,
        Self::WebhookEndpoints,
        Self::Uploads,
        Self::FileKeys,
        Self::StoredFiles,
        Self::FileRecords,
        Self::Handovers,
        Self::Logs,
        Self::Backups,
        Self::Account,
    ];

    pub fn position(self) -> usize {
        Self::ORDER.iter().position(|&s| s == self).unwrap_or(0)
    }

    pub fn action(self) -> Action {
        match self {
            Self::DeliveredMail | Self::Logs | Self::Backups => Action::Retain,
            _ => Action::Delete,
        }
    }

    /// Why a retained store keeps its data (shown on the case and in the final mail).
    pub fn constraint(self) -> Option<&'static str> {
        match self {
            Self::DeliveredMail => Some("delivered mail is in its recipients' mailboxes, beyond our reach"),
            Self::Logs => Some("logs name accounts by number only and are kept by the operator's log retention"),
            Self::Backups => Some("backups age out with their retention cycle; the case is re-applied after a restore"),
            _ => None,
        }
    }

    /// The key this store is searched by, by name (the evidence records this, never a value).
    pub fn searched_by(self) -> &'static str {
        match self {
            Self::Sessions => "sessions.user_id",
            Self::ApiTokens => "api_tokens.user_id",
            Self::SignInMethods => {
                "passkeys.user_id, totp_factors.user_id, recovery_codes.user_id, pending_sign_ins.user_id, \
                 passkey_ceremonies.user_id"
            }
            Self::Invitations => "invitations.invited_by (open), invitations.email",
            Self::Codes => "otp_challenges.share_id of shares.sender_id",
            Self::Grants => "download_grants.share_id of shares.sender_id",
            Self::DeliveredMail => "mail_outbox.share_id of shares.sender_id, mail_outbox.recipient (sent)",
            Self::Outbox => "mail_outbox.share_id of shares.sender_id, mail_outbox.recipient",
            Self::ShareEvents => "share_events.share_id of shares.sender_id",
            Self::RateLimits => "rate_limit_hits.bucket of the account (by prefix) and of shares.sender_id",
            Self::Shares => "shares.sender_id",
            Self::Notes => {
                "handovers.note_sealed (set) of handovers.sender_id, \
                 file_requests.uploader_note (not empty) of handovers.sender_id"
            }
            Self::FileRequests => "file_requests.handover_id of handovers.sender_id",
            Self::WebhookMessages => {
                "webhook_messages.sender_id, webhook_messages.endpoint_id of webhook_endpoints.owner_id"
            }
            Self::WebhookEndpoints => "webhook_endpoints.owner_id",
            Self::Uploads => "uploads.owner_id, with each storage key on disk",
            Self::FileKeys => {
                "files.owner_id, then each file's files.wrapped_key (destroyed) and files.key_destroyed_at (set)"
            }
            Self::StoredFiles => "files.owner_id, then each storage key on disk",
            Self::FileRecords => "files.owner_id",
            Self::Handovers => "handovers.sender_id",
            Self::Logs | Self::Backups => "none: outside the application's reach",
            Self::Account => "users.id",
        }
    }

    /// The statements of this store's rows that belong to subject `$1`, valid in both dialects.
    /// `None`: the store is not a table (disk, logs, backups).
    fn rows(self) -> Option<&'static TableRows> {
        Some(match self {
            Self::Sessions => &SESSIONS,
            Self::ApiTokens => &API_TOKENS,
            Self::SignInMethods => &SIGN_IN_METHODS,
            Self::Invitations => &INVITATIONS,
            Self::Codes => &CODES,
            Self::Grants => &GRANTS,
            Self::DeliveredMail => &DELIVERED_MAIL,
            Self::Outbox => &OUTBOX,
            Self::ShareEvents => &SHARE_EVENTS,
            Self::RateLimits => &RATE_LIMITS,
            Self::Shares => &SHARES,
            Self::Notes => &NOTES,
            Self::FileRequests => &FILE_REQUESTS,
            Self::WebhookMessages => &WEBHOOK_MESSAGES,
            Self::WebhookEndpoints => &WEBHOOK_ENDPOINTS,
            Self::Uploads => &UPLOADS,
            Self::FileRecords => &FILE_RECORDS,
            Self::Handovers => &HANDOVERS,
            Self::Account => &ACCOUNT,
            Self::FileKeys | Self::StoredFiles | Self::Logs | Self::Backups => return None,
        })
    }
}

/// A table store's rows of one subject: one count, and the statements that remove them (one
/// `DELETE` for most stores; one per table for a store that spans several).
struct TableRows {
    count: &'static str,
    delete: &'static [&'static str],
}

/// Builds a [`TableRows`] from the pieces of its `FROM … WHERE` text (literals or the two
/// key macros below).
macro_rules! table_rows {
    ($($from:expr),+ $(,)?) => {
        TableRows { count: concat!("SELECT count(*) ", $($from),+), delete: &[concat!("DELETE ", $($from),+)] }
    };
}
/// A store over several tables searched by the same key: the count adds up each table's, and
/// each table's rows are deleted by its own statement.
macro_rules! tables_rows {
    ($first:literal $(, $from:literal)* $(,)?) => {
        TableRows {
            count: concat!("SELECT (SELECT count(*) ", $first, ")" $(, " + (SELECT count(*) ", $from, ")")*),
            delete: &[concat!("DELETE ", $first) $(, concat!("DELETE ", $from))*],
        }
    };
}
/// The sender's handovers: the key of what hangs on a handover.
macro_rules! handovers_of {
    () => {
        "SELECT id FROM handovers WHERE sender_id = $1"
    };
}
/// The sender's shares: the key of everything that hangs on a share.
macro_rules! shares_of {
    () => {
        "SELECT id FROM shares WHERE sender_id = $1"
    };
}
/// The subject's address, read from the account row each time.
macro_rules! email {
    () => {
        "(SELECT email FROM users WHERE id = $1)"
    };
}

const SESSIONS: TableRows = table_rows!("FROM sessions WHERE user_id = $1");
const API_TOKENS: TableRows = table_rows!("FROM api_tokens WHERE user_id = $1");
const SIGN_IN_METHODS: TableRows = tables_rows!(
    "FROM passkeys WHERE user_id = $1",
    "FROM totp_factors WHERE user_id = $1",
    "FROM recovery_codes WHERE user_id = $1",
    "FROM pending_sign_ins WHERE user_id = $1",
    "FROM passkey_ceremonies WHERE user_id = $1",
);
const INVITATIONS: TableRows =
    table_rows!("FROM invitations WHERE (invited_by = $1 AND used_at IS NULL) OR email = ", email!());
const CODES: TableRows = table_rows!("FROM otp_challenges WHERE share_id IN (", shares_of!(), ")");
const GRANTS: TableRows = table_rows!("FROM download_grants WHERE share_id IN (", shares_of!(), ")");
const DELIVERED_MAIL: TableRows = table_rows!(
    "FROM mail_outbox WHERE status = 'sent' AND (share_id IN (",
    shares_of!(),
    ") OR recipient = ",
    email!(),
    ")"
);
const OUTBOX: TableRows =
    table_rows!("FROM mail_outbox WHERE share_id IN (", shares_of!(), ") OR recipient = ", email!());
const SHARE_EVENTS: TableRows = table_rows!("FROM share_events WHERE share_id IN (", shares_of!(), ")");
const RATE_LIMITS: TableRows = table_rows!(
    "FROM rate_limit_hits WHERE bucket = 'login:account:' || ",
    email!(),
    "
        OR substr(bucket, 1, length('login:account:' || ",
    email!(),
    " || '|')) = 'login:account:' || ",
    email!(),
    " || '|'
        OR EXISTS (SELECT 1 FROM shares s WHERE s.sender_id = $1
                      AND substr(bucket, 1, length('share:' || CAST(s.id AS TEXT) || ':'))
                          = 'share:' || CAST(s.id AS TEXT) || ':')"
);
const SHARES: TableRows = table_rows!("FROM shares WHERE sender_id = $1");
/// Notes are columns, not rows: destroying one empties it, and its handover or request row stays
/// for its own step (`has_note` still says a note was read).
const NOTES: TableRows = TableRows {
    count: concat!(
        "SELECT (SELECT count(*) FROM handovers WHERE sender_id = $1 AND note_sealed IS NOT NULL)
              + (SELECT count(*) FROM file_requests WHERE uploader_note <> '' AND handover_id IN (",
        handovers_of!(),
        "))"
    ),
    delete: &[
        "UPDATE handovers SET note_key = NULL, note_sealed = NULL WHERE sender_id = $1 AND note_sealed IS NOT NULL",
        concat!(
            "UPDATE file_requests SET uploader_note = '' WHERE uploader_note <> '' AND handover_id IN (",
            handovers_of!(),
            ")"
        ),
    ],
};
const FILE_REQUESTS: TableRows = table_rows!("FROM file_requests WHERE handover_id IN (", handovers_of!(), ")");
const WEBHOOK_MESSAGES: TableRows = table_rows!(
    "FROM webhook_messages WHERE sender_id = $1
        OR endpoint_id IN (SELECT id FROM webhook_endpoints WHERE owner_id = $1)"
);
const WEBHOOK_ENDPOINTS: TableRows = table_rows!("FROM webhook_endpoints WHERE owner_id = $1");
const UPLOADS: TableRows = table_rows!("FROM uploads WHERE owner_id = $1");
const FILE_RECORDS: TableRows = table_rows!("FROM files WHERE owner_id = $1");
const HANDOVERS: TableRows = table_rows!("FROM handovers WHERE sender_id = $1");
const ACCOUNT: TableRows = table_rows!("FROM users WHERE id = $1");
/// The subject's files that still hold a key: exactly what `DESTROY_FILE_KEYS` destroys, so that
/// its look again finds none unless a key arrived meanwhile (a file counted here that the statement
/// cannot change would keep the step from ever being verified).
const LIVE_FILE_KEYS: &str = "SELECT count(*) FROM files WHERE owner_id = $1 AND wrapped_key IS NOT NULL";
const DESTROY_FILE_KEYS: Sql = crate::lifecycle::destroy_file_keys!("owner_id = $1");
const STORAGE_KEYS: &str = "SELECT storage_key FROM files WHERE owner_id = $1 ORDER BY id";
const UPLOAD_KEYS: &str = "SELECT storage_key FROM uploads WHERE owner_id = $1 ORDER BY id";

/// Counts and deletes a subject's rows in one store (the table stores).
#[derive(Clone, Debug)]
pub struct TableAdapter {
    db: Db,
}

impl TableAdapter {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Rows of `store` that belong to `subject` (for the file keys, the keys not destroyed);
    /// `None` for a store that is not a table.
    pub async fn count(&self, store: Store, subject: i64) -> Result<Option<i64>, sqlx::Error> {
        if store == Store::FileKeys {
            let live =
                on_db!(&self.db, |pool| sqlx::query_scalar(LIVE_FILE_KEYS).bind(subject).fetch_one(pool).await?);
            return Ok(Some(live));
        }
        let Some(rows) = store.rows() else { return Ok(None) };
        let count = on_db!(&self.db, |pool| sqlx::query_scalar(rows.count).bind(subject).fetch_one(pool).await?);
        Ok(Some(count))
    }

    /// Deletes them; returns how many went.
    pub async fn delete(&self, store: Store, subject: i64) -> Result<u64, sqlx::Error> {
        if store == Store::FileKeys {
            return Ok(on_db!(&self.db, |pool| {
                sqlx::query(pool.sql(&DESTROY_FILE_KEYS)).bind(subject).execute(pool).await?.rows_affected()
            }));
        }
        let Some(rows) = store.rows() else { return Ok(0) };
        Ok(on_db!(&self.db, |pool| {
            // One transaction, so a store of several tables is never left half done.
            let mut tx = pool.begin_write().await?;
            let mut deleted = 0;
            for statement in rows.delete {
                deleted += sqlx::query(*statement).bind(subject).execute(&mut *tx).await?.rows_affected();
            }
            tx.commit().await?;
            deleted
        }))
    }

    /// The storage keys of the subject's resumable uploads (their bytes go before their rows).
    pub async fn upload_keys(&self, subject: i64) -> Result<Vec<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(UPLOAD_KEYS).bind(subject).fetch_all(pool).await)
    }

    /// The storage keys of the subject's files (the disk store's key).
    pub async fn storage_keys(&self, subject: i64) -> Result<Vec<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(STORAGE_KEYS).bind(subject).fetch_all(pool).await)
    }
}

#[cfg(test)]
mod tests {
    use super::Store;

    /// The run order a case open at the upgrade to every store's step was given, by store code.
    const RENUMBERED: &str = include_str!("../../migrations/sqlite/0050_deletion_every_store.sql");

    #[test]
    fn the_upgrade_gives_open_cases_the_run_order_of_every_store() {
        for store in Store::ORDER {
            let line = format!("WHEN '{}' THEN {}\n", store.code(), store.position());
            assert!(RENUMBERED.contains(&line), "the upgrade does not put {store:?} at {}", store.position());
        }
        let postgres = include_str!("../../migrations/postgres/0050_deletion_every_store.sql");
        assert_eq!(RENUMBERED, postgres, "the same statements in both dialects");
    }

    #[test]
    fn a_store_of_several_tables_counts_each_and_deletes_each_by_the_same_key() {
        let rows = Store::SignInMethods.rows().expect("a table store");
        assert!(rows.count.starts_with("SELECT (SELECT count(*) FROM passkeys WHERE user_id = $1) + (SELECT"));
        assert_eq!(rows.delete.len(), 5);
        assert!(rows.delete.iter().all(|d| d.starts_with("DELETE FROM ") && d.ends_with("WHERE user_id = $1")));
    }
}
