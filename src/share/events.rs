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
        Locked = "locked",
        Unlocked = "unlocked",
        Verified = "verified",
        /// The claim: shown as "download started".
        Downloaded = "downloaded",
        /// Every byte reached the claiming session (a contiguous prefix as long as the file).
        Completed = "download_completed",
        Refused = "refused",
        Revoked = "revoked",
        Purged = "purged",
    }
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ShareEvent {
    pub kind: EventKind,
    pub at: Timestamp,
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

    /// Records an event where failing to record it must not fail the request: logged instead.
    pub async fn record_quietly(&self, share_id: i64, kind: EventKind) {
        if let Err(error) = self.record(share_id, kind).await {
            tracing::warn!(share_id, kind = kind.code(), %error, "could not record a share event");
        }
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

    /// The timeline of one share, oldest first.
    pub async fn list(&self, share_id: i64) -> Result<Vec<ShareEvent>, sqlx::Error> {
        const SQL: &str = "SELECT kind, at FROM share_events WHERE share_id = $1 ORDER BY id";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_all(pool).await)
    }
}
