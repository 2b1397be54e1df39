//! SQL of file requests, both dialects side by side. The share's own transitions are in
//! `share::writes`; the handover and file rows are written with the statements shares use.

use std::time::Duration;

use super::{RequestLimits, UploadRefused, counts};
use crate::{
    db::{Db, Dialect, Sql, seconds},
    i18n::Lang,
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
}

/// A file as the uploader's page shows it: the name without invisible characters.
fn shown(file: FileInfo) -> FileInfo {
    FileInfo { original_name: strip_invisible(&file.original_name), ..file }
}
