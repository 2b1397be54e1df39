//! Requests as their senders read them: the listing with what arrived, the files of an answered
//! request, and where its news goes.

use super::{RequestLimits, RequestRepository, RequestState};
use crate::{
    db::{Dialect, Sql, Timestamp},
    i18n::Lang,
    lifecycle::ClaimedFile,
    on_db,
    scan::ScanState,
    sql,
    text::strip_invisible,
};

/// The requests ($1 the viewer, $2 whether they see all) with the state a sender reads, followed by
/// the caller's own conditions.
macro_rules! listing_sql {
    ($($tail:literal)+) => {
        sql!(
            "SELECT s.id, s.handover_id, u.email AS sender_email, s.recipient_email AS uploader_email, s.message,
                    s.lang, s.created_at, s.expires_at, s.consumed_at AS answered_at,
                    CASE WHEN s.status = 'purged' THEN 'purged'
                         WHEN s.consumed_at IS NOT NULL THEN 'answered'
                         WHEN s.revoked_at IS NOT NULL THEN 'ended'
                         WHEN s.expires_at <= " now " THEN 'expired'
                         ELSE 'open' END AS state,
                    s.locked_at IS NOT NULL AS locked, r.max_files, r.max_file_bytes, r.max_total_bytes,
                    r.uploader_note, r.reply_to_share_id AS reply_to
               FROM shares s JOIN users u ON u.id = s.sender_id JOIN file_requests r ON r.handover_id = s.handover_id
              WHERE s.kind = 'request' AND ($2 OR s.sender_id = $1)" $($tail)+
        )
    };
}
const LIST: Sql = listing_sql!(" ORDER BY s.id DESC LIMIT $3");
const FIND: Sql = listing_sql!(" AND s.id = $3");
/// A page older than `$4` (keyset, never OFFSET), for the API's cursor.
const PAGE: Sql = listing_sql!(" AND s.id < $4 ORDER BY s.id DESC LIMIT $3");

/// A file that arrived, as the sender and the listing see it.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct ArrivedFile {
    pub position: i32,
    pub name: String,
    pub size_bytes: i64,
    pub sha256: String,
    /// Its bytes are gone (the retention ended, the sender deleted them, or the scan refused it).
    pub purged: bool,
    /// Where its virus scan is (NULL: not subject to it).
    pub scan_state: Option<ScanState>,
    /// The virus clamd found, or why it was refused without one.
    pub scan_finding: Option<String>,
}

impl ArrivedFile {
    /// Whether its sender may have it: not subject to the scan, or released by it.
    pub fn is_released(&self) -> bool {
        self.scan_state.is_none_or(ScanState::is_released)
    }
}

/// A request as its sender (and `watasu request list`) sees it.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct RequestListing {
    pub id: i64,
    pub handover_id: i64,
    pub sender_email: String,
    pub uploader_email: String,
    pub message: String,
    pub lang: Lang,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: Timestamp,
    /// Open: when the link stops working. Answered: when the files go, less the delivery grace.
    #[serde(skip)]
    pub expires_at: Timestamp,
    #[serde(serialize_with = "rfc3339_opt")]
    pub answered_at: Option<Timestamp>,
    pub state: RequestState,
    /// Too many wrong codes: no more codes until the sender unlocks it.
    pub locked: bool,
    #[sqlx(flatten)]
    pub limits: RequestLimits,
    pub uploader_note: String,
    /// A reply: the share it answers.
    pub reply_to: Option<i64>,
    #[sqlx(skip)]
    pub files: Vec<ArrivedFile>,
}

fn rfc3339<S: serde::Serializer>(at: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

fn rfc3339_opt<S: serde::Serializer>(at: &Option<Timestamp>, serializer: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => rfc3339(at, serializer),
        None => serializer.serialize_none(),
    }
}

/// Where the news of an answered request goes: its sender's address, language and zone.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SenderReader {
    pub email: String,
    pub lang: Lang,
    pub time_zone: Option<String>,
}

impl RequestRepository {
    /// The newest `limit` requests the viewer may see (`all`: everyone's), with what arrived.
    pub async fn list(&self, viewer_id: i64, all: bool, limit: i64) -> Result<Vec<RequestListing>, sqlx::Error> {
        let rows: Vec<RequestListing> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LIST)).bind(viewer_id).bind(all).bind(limit).fetch_all(pool).await?
        });
        self.all_with_files(rows).await
    }

    /// A page of the viewer's requests older than `before`, newest first, with what arrived.
    pub async fn page(
        &self,
        viewer_id: i64,
        all: bool,
        before: i64,
        limit: i64,
    ) -> Result<Vec<RequestListing>, sqlx::Error> {
        let rows: Vec<RequestListing> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&PAGE)).bind(viewer_id).bind(all).bind(limit).bind(before).fetch_all(pool).await?
        });
        self.all_with_files(rows).await
    }

    /// One request, if the viewer may see it, with what arrived.
    pub async fn find(&self, viewer_id: i64, all: bool, id: i64) -> Result<Option<RequestListing>, sqlx::Error> {
        let row: Option<RequestListing> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FIND)).bind(viewer_id).bind(all).bind(id).fetch_optional(pool).await?
        });
        match row {
            Some(row) => Ok(Some(self.with_files(row).await?)),
            None => Ok(None),
        }
    }

    async fn all_with_files(&self, rows: Vec<RequestListing>) -> Result<Vec<RequestListing>, sqlx::Error> {
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            listed.push(self.with_files(row).await?);
        }
        Ok(listed)
    }

    async fn with_files(&self, row: RequestListing) -> Result<RequestListing, sqlx::Error> {
        const SQL: &str = "SELECT position, original_name AS name, size_bytes, sha256, purged_at IS NOT NULL AS purged,
                                  scan_state, scan_finding
                             FROM files WHERE handover_id = $1 ORDER BY position";
        let files: Vec<ArrivedFile> =
            on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(row.handover_id).fetch_all(pool).await?);
        let files = files.into_iter().map(|f| ArrivedFile { name: strip_invisible(&f.name), ..f }).collect();
        Ok(RequestListing { files, ..row })
    }

    /// The stored files of an answered request `id` the viewer may see, until they are gone, as
    /// the archive and the file responses read them: only those the virus scan released (or not
    /// subject to it), so a file being checked is never served.
    pub async fn answered_files(&self, viewer_id: i64, all: bool, id: i64) -> Result<Vec<ClaimedFile>, sqlx::Error> {
        const SQL: &str = "SELECT f.position, f.storage_key, f.original_name, f.size_bytes, f.sha256, f.crc32
                             FROM shares s JOIN files f ON f.handover_id = s.handover_id
                            WHERE s.id = $3 AND s.kind = 'request' AND s.status = 'consumed'
                              AND ($2 OR s.sender_id = $1) AND f.purged_at IS NULL
                              AND (f.scan_state IS NULL OR f.scan_state IN ('clean', 'too_large'))
                            ORDER BY f.position";
        let files: Vec<ClaimedFile> =
            on_db!(&self.db, |pool| { sqlx::query_as(SQL).bind(viewer_id).bind(all).bind(id).fetch_all(pool).await? });
        Ok(files.into_iter().map(|f| ClaimedFile { original_name: strip_invisible(&f.original_name), ..f }).collect())
    }

    /// The sender of request share `share_id`.
    pub async fn sender_reader(&self, share_id: i64) -> Result<Option<SenderReader>, sqlx::Error> {
        const SQL: &str = "SELECT u.email, u.lang, u.time_zone FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.id = $1 AND s.kind = 'request'";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_optional(pool).await)
    }
}
