//! SQL of file requests, both dialects side by side. The share's own transitions are in
//! `share::writes`; the handover and file rows are written with the statements shares use.

use std::time::Duration;

use super::{RequestLimits, RequestState, UploadRefused, counts};
use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    i18n::Lang,
    lifecycle::ClaimedFile,
    on_db,
    scan::ScanState,
    share::{FileInfo, INSERT_FILE, INSERT_HANDOVER, ShareKind, names::distinct_names, writes},
    sql,
    storage::StoredFile,
    text::strip_invisible,
    uploads::{PENDING_OF_REQUEST, Pending},
};

/// A request's limits, beside the handover it marks as inbound.
const INSERT_LIMITS: Sql = Sql::same(
    "INSERT INTO file_requests (handover_id, max_files, max_file_bytes, max_total_bytes, reply_to_share_id)
     VALUES ($1, $2, $3, $4, $5)",
);
/// The request share $1 while it takes files (open, unexpired, not closed by the GC), with its
/// handover, sender and limits. PostgreSQL holds the share's row until the transaction ends, so
/// two uploads to one request are checked against the limits one after the other (SQLite's write
/// transaction already serialises them), and the GC's close waits for the commit and then reads
/// what it wrote; a close that came first is seen here, whatever the clock said at `BEGIN`.
pub(crate) const OPEN_FOR_FILES: Sql = sql!(
    "SELECT s.handover_id, s.sender_id, r.max_files, r.max_file_bytes, r.max_total_bytes
       FROM shares s JOIN file_requests r ON r.handover_id = s.handover_id
      WHERE s.id = $1 AND s.kind = 'request' AND s.status = 'active' AND s.closed_at IS NULL
        AND s.expires_at > " now
    { sqlite: "", postgres: " FOR UPDATE OF s" }
);
/// What has arrived in handover $1, in order, with the scan's word on each. While the request
/// takes files, a row is purged only when the scan refused it, and stays to say so.
pub(crate) const ARRIVED: &str =
    "SELECT position, storage_key, original_name, content_type, size_bytes, sha256, scan_state,
                              scan_finding
                         FROM files WHERE handover_id = $1 ORDER BY position";
/// A file the uploader takes back before finishing; not one the scan refused, whose row stays to
/// say so (and whose event names it by its position).
const REMOVE_FILE: &str = "DELETE FROM files WHERE handover_id = $1 AND position = $2
                             AND (scan_state IS NULL OR scan_state NOT IN ('infected', 'refused'))
                           RETURNING storage_key";
/// A finished upload of request share $2 becomes one of its files: its row goes (only once, only
/// while it is unexpired and digested; see the uploads' `END`).
const CLAIM_REQUEST_UPLOAD: Sql = sql!(
    "DELETE FROM uploads WHERE id = $1 AND request_share_id = $2 AND sha256 IS NOT NULL AND expires_at > " now
);
const SET_NOTE: &str = "UPDATE file_requests SET uploader_note = $2 WHERE handover_id = $1";

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

/// What a new request needs written.
pub struct NewRequest<'a> {
    pub sender_id: i64,
    pub uploader: &'a str,
    pub message: &'a str,
    pub lang: Lang,
    pub ttl: Duration,
    pub limits: RequestLimits,
    pub token_hash: &'a str,
    /// A reply: the share it answers (one reply per share, by a unique index).
    pub reply_to: Option<i64>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct OpenRequest {
    pub handover_id: i64,
    pub sender_id: i64,
    #[sqlx(flatten)]
    pub limits: RequestLimits,
}

/// The open request share `$share_id` with room for one more file of `$size` bytes, checked inside
/// the caller's write transaction `$tx`: the files arrived count, and so do the request's
/// unfinished uploads (all but upload row `$excluding`, the one becoming this file; 0 for none),
/// so bytes still on their way cannot take the request past its limits. Expands to
/// `Result<Result<OpenRequest, UploadRefused>, sqlx::Error>` (`Closed` when it takes no files).
macro_rules! request_room {
    ($pool:ident, $tx:ident, $share_id:expr, $excluding:expr, $size:expr) => {
        async {
            use $crate::{
                request::{ARRIVED, OPEN_FOR_FILES, OpenRequest, Room, UploadRefused},
                share::FileInfo,
                uploads::{PENDING_OF_REQUEST, Pending},
            };
            let open: Option<OpenRequest> =
                sqlx::query_as($pool.sql(&OPEN_FOR_FILES)).bind($share_id).fetch_optional(&mut *$tx).await?;
            let Some(open) = open else { return Ok::<_, sqlx::Error>(Err(UploadRefused::Closed)) };
            let files: Vec<FileInfo> = sqlx::query_as(ARRIVED).bind(open.handover_id).fetch_all(&mut *$tx).await?;
            let pending: Pending = sqlx::query_as($pool.sql(&PENDING_OF_REQUEST))
                .bind($share_id)
                .bind($excluding)
                .fetch_one(&mut *$tx)
                .await?;
            Ok(Room::of(open.limits, &files, pending).admits($size).map(|()| (open, files)))
        }
        .await
    };
}
pub(crate) use request_room;

#[derive(Clone, Debug)]
pub struct RequestRepository {
    pub(super) db: Db,
}

impl RequestRepository {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// The empty handover, its limits and the uploader's share in one transaction; `None` for a
    /// disabled sender. Answers the share's id.
    pub async fn insert(&self, new: &NewRequest<'_>) -> Result<Option<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let handover_id: Option<i64> =
                sqlx::query_scalar(pool.sql(&INSERT_HANDOVER)).bind(new.sender_id).fetch_optional(&mut *tx).await?;
            let Some(handover_id) = handover_id else { return Ok(None) };
            sqlx::query(pool.sql(&INSERT_LIMITS))
                .bind(handover_id)
                .bind(new.limits.max_files)
                .bind(new.limits.max_file_bytes)
                .bind(new.limits.max_total_bytes)
                .bind(new.reply_to)
                .execute(&mut *tx)
                .await?;
            let share_id: i64 = sqlx::query_scalar(pool.sql(&writes::INSERT_SHARE))
                .bind(handover_id)
                .bind(new.sender_id)
                .bind(new.token_hash)
                .bind(new.uploader)
                .bind(new.message)
                .bind(new.lang)
                .bind(false)
                .bind(seconds(new.ttl))
                .bind(true)
                .bind(ShareKind::Request)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(share_id))
        })
    }

    /// What has arrived for request share `share_id` while it is open, its limits, and what its
    /// unfinished uploads hold.
    pub async fn open_files(
        &self,
        share_id: i64,
    ) -> Result<Option<(RequestLimits, Vec<FileInfo>, Pending)>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            let open: Option<OpenRequest> =
                sqlx::query_as(pool.sql(&OPEN_FOR_FILES)).bind(share_id).fetch_optional(pool).await?;
            let Some(open) = open else { return Ok(None) };
            let files: Vec<FileInfo> = sqlx::query_as(ARRIVED).bind(open.handover_id).fetch_all(pool).await?;
            let pending: Pending =
                sqlx::query_as(pool.sql(&PENDING_OF_REQUEST)).bind(share_id).bind(0_i64).fetch_one(pool).await?;
            Ok(Some((open.limits, files.into_iter().map(shown).collect(), pending)))
        })
    }

    /// Adds a stored file to the open request `share_id` under a name distinct from the others,
    /// if its limits have room; a refusal writes nothing (the caller removes the bytes). `scan`:
    /// the file starts pending, held from the sender until the virus scan releases it. `upload`:
    /// the finished upload (row id) the file is made of, consumed in the same transaction, so it
    /// becomes a file once (`Closed` when it is gone: ended, expired or already a file).
    pub async fn add_file(
        &self,
        share_id: i64,
        stored: &StoredFile,
        name: &str,
        content_type: &str,
        scan: bool,
        upload: Option<i64>,
    ) -> Result<Result<(), UploadRefused>, sqlx::Error> {
        let size = i64::try_from(stored.size_bytes).unwrap_or(i64::MAX);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let (OpenRequest { handover_id, sender_id, .. }, files) =
                match request_room!(pool, tx, share_id, upload.unwrap_or(0), size)? {
                    Ok(open) => open,
                    Err(refused) => return Ok(Err(refused)),
                };
            if let Some(upload) = upload {
                let claimed =
                    sqlx::query(pool.sql(&CLAIM_REQUEST_UPLOAD)).bind(upload).bind(share_id).execute(&mut *tx).await?;
                if claimed.rows_affected() != 1 {
                    return Ok(Err(UploadRefused::Closed));
                }
            }
            let names = files.iter().map(|f| f.original_name.clone()).chain([name.to_owned()]);
            let name = distinct_names(names).pop().unwrap_or_default();
            let position = files.iter().map(|f| f.position + 1).max().unwrap_or(0);
            sqlx::query(pool.sql(&INSERT_FILE))
                .bind(sender_id)
                .bind(handover_id)
                // As a share's files bind it: a statement prepared on this connection keeps the
                // parameter types it was first prepared with.
                .bind(i64::from(position))
                .bind(&stored.key)
                .bind(&name)
                .bind(content_type)
                .bind(size)
                .bind(&stored.sha256)
                .bind(i64::from(stored.crc32))
                .bind(scan.then_some(ScanState::Pending))
                .bind(stored.sealing())
                .bind(stored.sealed.as_ref().map(|key| key.wrapped.clone()))
                .bind(stored.sealed.as_ref().map(|key| key.key_id.clone()))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Ok(()))
        })
    }

    /// Takes the file at `position` out of the open request `share_id`; answers its storage key,
    /// whose bytes the caller then deletes (the leftover sweep removes them should that fail: no
    /// row needs them any more).
    pub async fn remove_file(&self, share_id: i64, position: i32) -> Result<Option<String>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let open: Option<OpenRequest> =
                sqlx::query_as(pool.sql(&OPEN_FOR_FILES)).bind(share_id).fetch_optional(&mut *tx).await?;
            let Some(open) = open else { return Ok(None) };
            let key: Option<String> =
                sqlx::query_scalar(REMOVE_FILE).bind(open.handover_id).bind(position).fetch_optional(&mut *tx).await?;
            tx.commit().await?;
            Ok(key)
        })
    }

    /// The uploader finished: the note is kept and the request answered, once, if anything arrived.
    /// The files are then kept `keep` longer than the GC's grace (see `ANSWER_REQUEST`).
    pub async fn answer(
        &self,
        share_id: i64,
        note: &str,
        keep: Duration,
    ) -> Result<Result<(), UploadRefused>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let open: Option<OpenRequest> =
                sqlx::query_as(pool.sql(&OPEN_FOR_FILES)).bind(share_id).fetch_optional(&mut *tx).await?;
            let Some(open) = open else { return Ok(Err(UploadRefused::Closed)) };
            let files: Vec<FileInfo> = sqlx::query_as(ARRIVED).bind(open.handover_id).fetch_all(&mut *tx).await?;
            if !files.iter().any(counts) {
                return Ok(Err(UploadRefused::NothingArrived));
            }
            sqlx::query(SET_NOTE).bind(open.handover_id).bind(note).execute(&mut *tx).await?;
            let answered = sqlx::query(pool.sql(&writes::ANSWER_REQUEST))
                .bind(share_id)
                .bind(seconds(keep))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if answered != 1 {
                return Ok(Err(UploadRefused::Closed));
            }
            tx.commit().await?;
            Ok(Ok(()))
        })
    }

    /// Ends the keeping of an answered request at once ($2 the grace): the next GC pass removes
    /// its files. False when it was not answered.
    pub async fn end_keeping(&self, share_id: i64, grace: Duration) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&writes::END_KEEPING))
                .bind(share_id)
                .bind(seconds(grace))
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// The newest `limit` requests the viewer may see (`all`: everyone's), with what arrived.
    pub async fn list(&self, viewer_id: i64, all: bool, limit: i64) -> Result<Vec<RequestListing>, sqlx::Error> {
        let rows: Vec<RequestListing> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LIST)).bind(viewer_id).bind(all).bind(limit).fetch_all(pool).await?
        });
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            listed.push(self.with_files(row).await?);
        }
        Ok(listed)
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
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            listed.push(self.with_files(row).await?);
        }
        Ok(listed)
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
}

/// Where the news of an answered request goes: its sender's address, language and zone.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SenderReader {
    pub email: String,
    pub lang: Lang,
    pub time_zone: Option<String>,
}

impl RequestRepository {
    /// The sender of request share `share_id`.
    pub async fn sender_reader(&self, share_id: i64) -> Result<Option<SenderReader>, sqlx::Error> {
        const SQL: &str = "SELECT u.email, u.lang, u.time_zone FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.id = $1 AND s.kind = 'request'";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_optional(pool).await)
    }
}

/// A file as the uploader's page shows it: the name without invisible characters.
fn shown(file: FileInfo) -> FileInfo {
    FileInfo { original_name: strip_invisible(&file.original_name), ..file }
}
