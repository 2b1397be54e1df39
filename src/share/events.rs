//! A share's timeline for its sender. Events name what happened and when — never a token, a
//! code, an address or a client IP.

use crate::db::{Db, Timestamp};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Opened,
    CodeSent,
    CodeMailFailed,
    CodeFailed,
    Locked,
    Unlocked,
    Verified,
    Downloaded,
    Refused,
    Revoked,
    Purged,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Opened => "opened",
            Self::CodeSent => "code_sent",
            Self::CodeMailFailed => "code_mail_failed",
            Self::CodeFailed => "code_failed",
            Self::Locked => "locked",
            Self::Unlocked => "unlocked",
            Self::Verified => "verified",
            Self::Downloaded => "downloaded",
            Self::Refused => "refused",
            Self::Revoked => "revoked",
            Self::Purged => "purged",
        }
    }
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ShareEvent {
    pub kind: String,
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
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query(SQL).bind(share_id).bind(kind.as_str()).execute(pool).await?.rows_affected()
            }
            Db::Postgres(pool) => {
                sqlx::query(SQL).bind(share_id).bind(kind.as_str()).execute(pool).await?.rows_affected()
            }
        };
        Ok(())
    }

    /// Records an event where failing to record it must not fail the request: logged instead.
    pub async fn record_quietly(&self, share_id: i64, kind: EventKind) {
        if let Err(error) = self.record(share_id, kind).await {
            tracing::warn!(share_id, kind = kind.as_str(), %error, "could not record a share event");
        }
    }

    /// The timeline of one share, oldest first.
    pub async fn list(&self, share_id: i64) -> Result<Vec<ShareEvent>, sqlx::Error> {
        const SQL: &str = "SELECT kind, at FROM share_events WHERE share_id = $1 ORDER BY id";
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(SQL).bind(share_id).fetch_all(pool).await,
            Db::Postgres(pool) => sqlx::query_as(SQL).bind(share_id).fetch_all(pool).await,
        }
    }
}
