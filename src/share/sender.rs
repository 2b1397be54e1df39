//! The sender's view of shares: their own list (newest first, keyset-paginated, optionally of one
//! outcome), one share's details, the shares and files of its handover, and the ownership rule: a
//! sender sees their own shares only, an admin sees all.
//! A share that is not visible is indistinguishable from one that does not exist.

use crate::{
    db::{Db, Dialect, Sql, Timestamp},
    on_db, sql,
};

crate::db_code! {
    /// Where a share stands, in the words a sender understands.
    pub enum SenderStatus {
        Waiting = "waiting",
        Locked = "locked",
        Downloaded = "downloaded",
        Expired = "expired",
        Revoked = "revoked",
        /// Gone from the server before it was downloaded, ended or expired (an account deletion).
        Deleted = "deleted",
    }
}

#[derive(sqlx::FromRow)]
struct SummaryRow {
    id: i64,
    recipient_email: String,
    original_name: String,
    size_bytes: i64,
    file_count: i64,
    created_at: Timestamp,
    expires_at: Timestamp,
    shown_status: SenderStatus,
    file_deleted: bool,
    downloaded_at: Option<Timestamp>,
}

/// One share in a sender's list or on its page.
#[derive(Clone, Debug)]
pub struct ShareSummary {
    pub id: i64,
    pub recipient_email: String,
    /// The handover's first file.
    pub file_name: String,
    /// The handover's files together.
    pub size_bytes: i64,
    /// How many files the handover holds.
    pub file_count: i64,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// How the share ended (or that it has not): the outcome, kept after the file is gone.
    pub status: SenderStatus,
    /// The file is gone from the server: a fact of its own, after any outcome. Nothing changes
    /// any more once it is.
    pub file_deleted: bool,
    /// When the download started (the claim), once it did.
    pub downloaded_at: Option<Timestamp>,
}

impl From<SummaryRow> for ShareSummary {
    fn from(row: SummaryRow) -> Self {
        Self {
            id: row.id,
            recipient_email: row.recipient_email,
            file_name: crate::text::strip_invisible(&row.original_name),
            size_bytes: row.size_bytes,
            file_count: row.file_count,
            created_at: row.created_at,
            expires_at: row.expires_at,
            status: row.shown_status,
            file_deleted: row.file_deleted,
            downloaded_at: row.downloaded_at,
        }
    }
}

impl ShareSummary {
    /// The share hands over a secret note instead of files.
    pub fn is_note(&self) -> bool {
        self.file_count == 0
    }
}

impl SenderStatus {
    /// The share is still open, so its sender may end it.
    pub fn can_be_ended(self) -> bool {
        matches!(self, Self::Waiting | Self::Locked)
    }
}

/// Who is asking: their shares only, or every share for an admin.
#[derive(Clone, Copy, Debug)]
pub struct Viewer {
    pub user_id: i64,
    pub is_admin: bool,
}

/// The viewer's shares ($1 the viewer, $2 whether an admin) with the outcome a sender reads and
/// whether the file is gone (deliveries only: a request has its own pages; a secret note's share has no file: no name, no size), followed by the caller's own conditions. The outcome outlives the
/// purge: a purged share still reads as downloaded, revoked or expired. `within` puts the select
/// inside a statement of the caller's, which then reads the outcome as a column.
macro_rules! summary_sql {
    ($($tail:literal)+) => { summary_sql!(within ""; $($tail)+) };
    (within $head:literal; $($tail:literal)+) => {
        sql!(
            $head "SELECT s.id, s.recipient_email, COALESCE(f.original_name, '') AS original_name,
                COALESCE((SELECT CAST(SUM(x.size_bytes) AS BIGINT) FROM files x WHERE x.handover_id = s.handover_id), 0) AS size_bytes,
                (SELECT count(*) FROM files x WHERE x.handover_id = s.handover_id) AS file_count,
                s.created_at, s.expires_at,
                CASE WHEN s.consumed_at IS NOT NULL THEN 'downloaded'
                     WHEN s.revoked_at IS NOT NULL THEN 'revoked'
                     WHEN s.expires_at <= " now " THEN 'expired'
                     WHEN s.status = 'purged' THEN 'deleted'
                     WHEN s.locked_at IS NOT NULL THEN 'locked'
                     ELSE 'waiting' END AS shown_status,
                s.status = 'purged' AS file_deleted, s.consumed_at AS downloaded_at
           FROM shares s LEFT JOIN files f ON f.handover_id = s.handover_id AND f.position = 0
          WHERE s.kind = 'delivery' AND ($2 OR s.sender_id = $1)" $($tail)+
        )
    };
}
/// A page of the list; $5 is the one outcome to show, or '' for all. The filter reads the outcome
/// the inner select computes, so the rule for it stays written once.
const LIST_PAGE: Sql = summary_sql!(within "SELECT * FROM (";
    " AND s.id < $3) listed WHERE ($5 = '' OR listed.shown_status = $5) ORDER BY listed.id DESC LIMIT $4");
const FIND_ONE: Sql = summary_sql!(" AND s.id = $3");
/// Every share of the handover share $3 belongs to, in the order they were made.
const FIND_HANDOVER: Sql =
    summary_sql!(" AND s.handover_id = (SELECT h.handover_id FROM shares h WHERE h.id = $3) ORDER BY s.id");

/// One file of a handover, as its sender sees it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct HandoverFile {
    pub original_name: String,
    pub size_bytes: i64,
    /// The content's SHA-256, hex (the API answers it; the recipient's page shows it).
    pub sha256: String,
    /// The virus scan's state (`None`: not subject to it) and its finding.
    pub scan_state: Option<crate::scan::ScanState>,
    pub scan_finding: Option<String>,
}

#[derive(Clone, Debug)]
pub struct SenderShares {
    db: Db,
}

impl SenderShares {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// A page of the viewer's shares, newest first, older than `before` (keyset, never OFFSET),
    /// only those with `outcome` if one is given.
    pub async fn list(
        &self,
        viewer: Viewer,
        outcome: Option<SenderStatus>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ShareSummary>, sqlx::Error> {
        let before = before.unwrap_or(i64::MAX);
        let outcome = outcome.map_or("", SenderStatus::code);
        let rows: Vec<SummaryRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LIST_PAGE))
                .bind(viewer.user_id)
                .bind(viewer.is_admin)
                .bind(before)
                .bind(limit)
                .bind(outcome)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(ShareSummary::from).collect())
    }

    /// One share, if the viewer may see it.
    pub async fn find(&self, viewer: Viewer, id: i64) -> Result<Option<ShareSummary>, sqlx::Error> {
        let row: Option<SummaryRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FIND_ONE))
                .bind(viewer.user_id)
                .bind(viewer.is_admin)
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(ShareSummary::from))
    }

    /// Every share of the handover share `id` belongs to (itself included), if the viewer may
    /// see it; empty otherwise.
    pub async fn handover(&self, viewer: Viewer, id: i64) -> Result<Vec<ShareSummary>, sqlx::Error> {
        let rows: Vec<SummaryRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FIND_HANDOVER))
                .bind(viewer.user_id)
                .bind(viewer.is_admin)
                .bind(id)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(ShareSummary::from).collect())
    }

    /// The files of share `id`'s handover in order, if the viewer may see it; empty otherwise.
    pub async fn files(&self, viewer: Viewer, id: i64) -> Result<Vec<HandoverFile>, sqlx::Error> {
        const SQL: &str = "SELECT f.original_name, f.size_bytes, f.sha256, f.scan_state, f.scan_finding
               FROM shares s JOIN files f ON f.handover_id = s.handover_id
              WHERE s.kind = 'delivery' AND ($2 OR s.sender_id = $1) AND s.id = $3 ORDER BY f.position";
        let mut files: Vec<HandoverFile> = on_db!(&self.db, |pool| {
            sqlx::query_as(SQL).bind(viewer.user_id).bind(viewer.is_admin).bind(id).fetch_all(pool).await?
        });
        for file in &mut files {
            file.original_name = crate::text::strip_invisible(&file.original_name);
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_statement_ends_with_its_own_conditions_in_both_dialects() {
        for statement in [super::FIND_ONE.sqlite, super::FIND_ONE.postgres] {
            assert!(
                statement.ends_with("WHERE s.kind = 'delivery' AND ($2 OR s.sender_id = $1) AND s.id = $3"),
                "{statement}"
            );
        }
        assert!(super::LIST_PAGE.sqlite.contains("s.expires_at <= unixepoch('subsec') THEN 'expired'"));
        assert!(super::LIST_PAGE.postgres.contains("s.expires_at <= now() THEN 'expired'"));
        assert!(super::LIST_PAGE.postgres.starts_with("SELECT * FROM (SELECT s.id,"));
        assert!(super::LIST_PAGE.postgres.ends_with(
            " AND s.id < $3) listed WHERE ($5 = '' OR listed.shown_status = $5) ORDER BY listed.id DESC LIMIT $4"
        ));
    }
}
