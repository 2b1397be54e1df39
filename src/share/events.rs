//! A share's timeline for its sender. Events name what happened and when — never a token, a
//! code, an address or a client IP.

use crate::{
    db::{Db, Dialect, Sql, Timestamp},
    on_db, sql,
};

/// Repeats of a visitor-made event within this long are one timeline entry.
const COLLAPSE_WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);

crate::db_code! {
    /// What happened to a share, as its timeline shows it.
    pub enum EventKind {
        Opened = "opened",
        CodeSent = "code_sent",
        CodeMailFailed = "code_mail_failed",
        CodeFailed = "code_failed",
        /// A browser used up its code requests for a while (recorded once per block).
        CodeRequestsBlocked = "code_requests_blocked",
        Locked = "locked",
        Unlocked = "unlocked",
        Verified = "verified",
        /// The claim: shown as "download started".
        Downloaded = "downloaded",
        /// Every byte reached the claiming session (a contiguous prefix as long as the file).
        Completed = "download_completed",
        Refused = "refused",
        Revoked = "revoked",
        /// The validity ran out before anyone downloaded the file; recorded at the expiry time.
        Expired = "expired",
        /// The sender sent the recipient a new link (the old one stopped working).
        LinkRenewed = "link_renewed",
        /// The virus scan refused a file of the handover: the share ended (recorded instead of
        /// `revoked`).
        ScanRefused = "scan_refused",
        /// The data keys of the share's encrypted files were destroyed (before their bytes are
        /// deleted): from then on no copy of them can be read, even while the delete is retried.
        KeyDestroyed = "key_destroyed",
        Purged = "purged",
        /// A request's uploader left a file (it may still remove it before finishing).
        FileUploaded = "file_uploaded",
        /// A request's uploader finished: the files are the sender's until the retention ends.
        Answered = "request_answered",
        /// The virus scan refused a file a request's uploader left; its bytes were deleted, the
        /// request goes on.
        FileRefused = "file_refused",
    }
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ShareEvent {
    pub kind: EventKind,
    pub at: Timestamp,
    /// The name of the file the event is about, if it is about one.
    pub file_name: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ShareEvents {
    db: Db,
}

impl ShareEvents {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    pub async fn record(&self, share_id: i64, kind: EventKind) -> Result<(), sqlx::Error> {
        const SQL: &str = "INSERT INTO share_events (share_id, kind) VALUES ($1, $2)";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(share_id).bind(kind).execute(pool).await.map(drop))
    }

    /// Records an event about the file at `position` in the share's handover (the timeline names it).
    pub async fn record_about_file(&self, share_id: i64, kind: EventKind, position: i32) {
        const SQL: &str = "INSERT INTO share_events (share_id, kind, file_position) VALUES ($1, $2, $3)";
        let done = on_db!(&self.db, |pool| {
            sqlx::query(SQL).bind(share_id).bind(kind).bind(position).execute(pool).await.map(drop)
        });
        if let Err(error) = done {
            tracing::warn!(share_id, kind = kind.code(), %error, "could not record a share event");
        }
    }

    /// Records an event where failing to record it must not fail the request: logged instead.
    pub async fn record_quietly(&self, share_id: i64, kind: EventKind) {
        if let Err(error) = self.record(share_id, kind).await {
            tracing::warn!(share_id, kind = kind.code(), %error, "could not record a share event");
        }
    }

    /// How many browsers (sessions) typed wrong codes for the share since it was last unlocked or
    /// given a fresh link: one is most likely the recipient mistyping, several that the link
    /// travelled. Codes of sessions that have ended since are no longer counted.
    pub async fn wrong_code_browsers(&self, share_id: i64) -> Result<i64, sqlx::Error> {
        const SQL: &str = "SELECT count(DISTINCT c.session_id) FROM otp_challenges c
            WHERE c.share_id = $1 AND c.attempts > 0
              AND NOT EXISTS (SELECT 1 FROM share_events e WHERE e.share_id = c.share_id
                                 AND e.kind IN ('unlocked', 'link_renewed') AND e.at > c.created_at)";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(share_id).fetch_one(pool).await)
    }

    /// Records an event that visitors can repeat at will (a landing page view, a refused
    /// download) at most once per kind and hour, so nobody can flood the sender's timeline.
    pub async fn record_collapsed(&self, share_id: i64, kind: EventKind) {
        const SQL: Sql = sql!("INSERT INTO share_events (share_id, kind) SELECT $1, $2
            WHERE NOT EXISTS (SELECT 1 FROM share_events WHERE share_id = $1 AND kind = $2
                                 AND at > " now " - " secs("$3") ")");
        let window = crate::db::seconds(COLLAPSE_WINDOW);
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SQL)).bind(share_id).bind(kind).bind(window).execute(pool).await.map(drop)
        });
        if let Err(error) = done {
            tracing::warn!(share_id, kind = kind.code(), %error, "could not record a share event");
        }
    }

    /// Records that the share expired unused, dated at its expiry, when that is what happened:
    /// not for a download or a revoke (whose end is its own event), nor before the expiry; once
    /// (a delete that failed is retried).
    pub async fn record_expiry(&self, share_id: i64) {
        const SQL: Sql = sql!("INSERT INTO share_events (share_id, kind, at)
            SELECT id, $2, expires_at FROM shares
             WHERE id = $1 AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at <= " now "
               AND NOT EXISTS (SELECT 1 FROM share_events WHERE share_id = $1 AND kind = $2)");
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SQL)).bind(share_id).bind(EventKind::Expired).execute(pool).await.map(drop)
        });
        if let Err(error) = done {
            tracing::warn!(share_id, %error, "could not record a share's expiry");
        }
    }

    /// The timeline of one share, oldest first.
    pub async fn list(&self, share_id: i64) -> Result<Vec<ShareEvent>, sqlx::Error> {
        const SQL: &str = "SELECT e.kind, e.at, f.original_name AS file_name
                             FROM share_events e JOIN shares s ON s.id = e.share_id
                             LEFT JOIN files f ON f.handover_id = s.handover_id AND f.position = e.file_position
                            WHERE e.share_id = $1 ORDER BY e.id";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_all(pool).await)
    }
}
