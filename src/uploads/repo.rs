//! SQL of resumable uploads. Every offset change is conditional on the offset it started from, so
//! two writers (even in two processes) never both advance an upload.

use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    on_db, sql,
    storage::StoredFile,
};

use super::{NewUpload, Owner, UPLOAD_TTL, UploadRow};
use crate::request::{UploadRefused, request_room};

/// PostgreSQL locks the sender's row so two creations cannot both pass the reservation check
/// (SQLite's write transaction already serialises them).
const LOCK_SENDER: Sql = sql!(
    "SELECT id FROM users WHERE id = $1 AND disabled_at IS NULL" { sqlite: "", postgres: " FOR UPDATE" }
);
/// What a sender's live uploads hold: an unfinished one its declared length, a finished one not
/// made into a share yet its bytes (its row goes with the share). SUM of a BIGINT is numeric on
/// PostgreSQL: cast back.
const RESERVED: Sql = sql!(
    "SELECT CAST(COALESCE(SUM(upload_length), 0) AS BIGINT) FROM uploads
      WHERE owner_id = $1 AND request_share_id IS NULL AND expires_at > " now
);
/// What a file request's unfinished uploads hold ($2: one not to count, 0 for none), as its limits
/// count them: each a file, its declared length its bytes.
pub(crate) const PENDING_OF_REQUEST: Sql = sql!(
    "SELECT COUNT(*) AS files, CAST(COALESCE(SUM(upload_length), 0) AS BIGINT) AS bytes FROM uploads
      WHERE request_share_id = $1 AND id <> $2 AND expires_at > " now
);
const INSERT: Sql = sql!(
    "INSERT INTO uploads (public_id, owner_id, storage_key, upload_length, metadata, file_name, content_type,
                          expires_at, request_share_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, " now " + " secs("$8") ", $9) RETURNING id"
);
const FIND: Sql = sql!(
    "SELECT id, storage_key, upload_length, upload_offset, metadata, file_name, content_type, sha256, crc32,
            expires_at, wrapped_key, file_key_id, multipart_id, part_bytes, digest_state
       FROM uploads
      WHERE public_id = $1 AND ((request_share_id IS NULL AND owner_id = $2) OR request_share_id = $3)
        AND expires_at > " now
);
/// Bytes arrived: the offset moves on and the expiry slides.
const ADVANCE: Sql = sql!(
    "UPDATE uploads SET upload_offset = upload_offset + $3, expires_at = " now " + " secs("$4") ",
                        updated_at = " now "
      WHERE id = $1 AND upload_offset = $2 AND expires_at > " now " RETURNING expires_at"
);
/// The winning writer's piece, recorded with its advance.
const RECORD_PIECE: Sql = Sql::same("INSERT INTO upload_pieces (upload_id, start_offset, piece) VALUES ($1, $2, $3)");
/// Parts of a full part's size filled by an advance take the place of the pieces that held their
/// front: the pieces left are those after the last part.
const FORGET_PIECES: Sql = Sql::same("DELETE FROM upload_pieces WHERE upload_id = $1");
const RECORD_PART: Sql = Sql::same("INSERT INTO upload_parts (upload_id, start_offset, e_tag) VALUES ($1, $2, $3)");
const RECORD_DIGEST: Sql = Sql::same("UPDATE uploads SET digest_state = $2 WHERE id = $1");
const BEGIN_PARTS: Sql = Sql::same("UPDATE uploads SET multipart_id = $2, part_bytes = $3 WHERE id = $1");
const PARTS: Sql = Sql::same("SELECT e_tag FROM upload_parts WHERE upload_id = $1 ORDER BY start_offset");
/// A file stored whole becomes a finished upload as it is inserted, sealed as it was stored.
const INSERTED_FINISHED: Sql = Sql::same(
    "UPDATE uploads SET upload_offset = upload_length, sha256 = $2, crc32 = $3, sealing = $4, wrapped_key = $5,
                        file_key_id = $6
      WHERE id = $1",
);
const PIECES: Sql = Sql::same("SELECT piece FROM upload_pieces WHERE upload_id = $1 ORDER BY start_offset");
const FINISH: Sql = sql!(
    "UPDATE uploads SET sha256 = $2, crc32 = $3, updated_at = " now "
      WHERE id = $1 AND upload_offset = upload_length AND sha256 IS NULL"
);
const DELETE: Sql = Sql::same("DELETE FROM uploads WHERE id = $1");
/// Ends an upload for good. The digest goes too: a share claims only a digested upload, and this
/// must hold whatever the clocks say (PostgreSQL's `now()` is when a transaction began, so a
/// claim begun just before this statement would still see the upload unexpired). A sealed
/// upload's key goes with it, before its bytes are deleted.
const END: Sql = sql!(
    "UPDATE uploads SET expires_at = " now ", sha256 = NULL, wrapped_key = NULL WHERE id = $1 AND expires_at > " now
);
const EXPIRE_ALL_OF_OWNER: Sql =
    sql!("UPDATE uploads SET expires_at = " now ", wrapped_key = NULL WHERE owner_id = $1 AND expires_at > " now);
const EXPIRE_ALL_OF_REQUEST: Sql = sql!(
    "UPDATE uploads SET expires_at = " now ", sha256 = NULL, wrapped_key = NULL
      WHERE request_share_id = $1 AND expires_at > " now
);
const EXPIRED: Sql =
    sql!("SELECT id, storage_key FROM uploads WHERE expires_at <= " now " ORDER BY expires_at LIMIT $1");
/// An expired upload's key goes before its bytes are collected.
const DESTROY_EXPIRED_KEYS: Sql =
    sql!("UPDATE uploads SET wrapped_key = NULL WHERE expires_at <= " now " AND wrapped_key IS NOT NULL");
const DELETE_EXPIRED: Sql = sql!("DELETE FROM uploads WHERE id = $1 AND expires_at <= " now);

/// Why a creation was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    SenderDisabled,
    /// A file request's upload: the request's limits (files arrived and unfinished uploads
    /// counted) have no room for it, or the request takes no files.
    Request(UploadRefused),
    /// The sender's unfinished uploads already reserve this much.
    OverReservation {
        reserved: u64,
    },
}

/// What an offset advance records with it: the parts it filled (start offset, the store's
/// answer), the digest of every byte in parts after them, and the piece holding its bytes past
/// the last part (start offset, name).
#[derive(Debug, Default)]
pub struct Advance<'a> {
    pub parts: &'a [(u64, String)],
    pub digest: Option<&'a [u8]>,
    pub piece: Option<(u64, &'a str)>,
}

#[derive(Clone, Debug)]
pub struct UploadRepository {
    db: Db,
}

fn db_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl UploadRepository {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Inserts the upload unless the sender is disabled or its length would take what the
    /// sender's live uploads hold past `reservation`; a file request's upload instead unless the
    /// request has no room for it.
    pub async fn insert(&self, new: &NewUpload, reservation: u64) -> Result<Result<i64, Refusal>, sqlx::Error> {
        self.insert_as(new, reservation, None).await
    }

    /// Inserts a file already `stored` whole as a finished upload, under the same refusals.
    pub async fn insert_finished(
        &self,
        new: &NewUpload,
        stored: &StoredFile,
        reservation: u64,
    ) -> Result<Result<i64, Refusal>, sqlx::Error> {
        self.insert_as(new, reservation, Some(stored)).await
    }

    async fn insert_as(
        &self,
        new: &NewUpload,
        reservation: u64,
        finished: Option<&StoredFile>,
    ) -> Result<Result<i64, Refusal>, sqlx::Error> {
        let ttl = seconds(UPLOAD_TTL);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let owner_id = match new.owner {
                Owner::Sender(sender_id) => {
                    let sender: Option<i64> =
                        sqlx::query_scalar(pool.sql(&LOCK_SENDER)).bind(sender_id).fetch_optional(&mut *tx).await?;
                    if sender.is_none() {
                        return Ok(Err(Refusal::SenderDisabled));
                    }
                    let reserved: i64 =
                        sqlx::query_scalar(pool.sql(&RESERVED)).bind(sender_id).fetch_one(&mut *tx).await?;
                    let reserved = u64::try_from(reserved).unwrap_or(0);
                    if reserved.saturating_add(new.length) > reservation {
                        return Ok(Err(Refusal::OverReservation { reserved }));
                    }
                    sender_id
                }
                Owner::Request(share_id) => match request_room!(pool, tx, share_id, 0_i64, db_int(new.length))? {
                    Ok((open, _)) => open.sender_id,
                    Err(refused) => return Ok(Err(Refusal::Request(refused))),
                },
            };
            let id = sqlx::query_scalar(pool.sql(&INSERT))
                .bind(&new.public_id)
                .bind(owner_id)
                .bind(&new.storage_key)
                .bind(db_int(new.length))
                .bind(new.metadata.raw.as_deref())
                .bind(new.metadata.get("filename").unwrap_or_default())
                .bind(new.metadata.get("filetype").unwrap_or_default())
                .bind(ttl)
                .bind(new.owner.request_share_id())
                .fetch_one(&mut *tx)
                .await?;
            if let Some(stored) = finished {
                sqlx::query(pool.sql(&INSERTED_FINISHED))
                    .bind(id)
                    .bind(&stored.sha256)
                    .bind(i64::from(stored.crc32))
                    .bind(stored.sealing())
                    .bind(stored.sealed.as_ref().map(|key| key.wrapped.clone()))
                    .bind(stored.sealed.as_ref().map(|key| key.key_id.clone()))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(Ok(id))
        })
    }

    /// The owner's unexpired upload with this public id.
    pub async fn find(&self, public_id: &str, owner: Owner) -> Result<Option<UploadRow>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FIND))
                .bind(public_id)
                // No account and no share has id 0: each owner matches only its own kind.
                .bind(owner.sender_id().unwrap_or(0))
                .bind(owner.request_share_id().unwrap_or(0))
                .fetch_optional(pool)
                .await
        })
    }

    /// Moves the offset from `from` on by `by` bytes, recording `piece` (the object holding those
    /// bytes) in the same transaction; `None` when it was no longer at `from` (or the upload
    /// expired or went), and then no piece is recorded.
    pub async fn advance(
        &self,
        id: i64,
        from: u64,
        by: u64,
        piece: Option<&str>,
    ) -> Result<Option<Timestamp>, sqlx::Error> {
        let advance = Advance { piece: piece.map(|piece| (from, piece)), ..Advance::default() };
        self.advance_with(id, from, by, &advance).await
    }

    /// Records that an upload's multipart upload `multipart_id` takes its bytes, in parts of
    /// `part_bytes`.
    pub async fn begin_parts(&self, id: i64, multipart_id: &str, part_bytes: u64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&BEGIN_PARTS))
            .bind(id)
            .bind(multipart_id)
            .bind(db_int(part_bytes))
            .execute(pool)
            .await
            .map(drop))
    }

    /// The answers of an upload's recorded parts, in offset order.
    pub async fn parts(&self, id: i64) -> Result<Vec<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&PARTS)).bind(id).fetch_all(pool).await)
    }

    /// As [`advance`](Self::advance), recording what `advance` holds in the same transaction.
    pub async fn advance_with(
        &self,
        id: i64,
        from: u64,
        by: u64,
        advance: &Advance<'_>,
    ) -> Result<Option<Timestamp>, sqlx::Error> {
        let ttl = seconds(UPLOAD_TTL);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let expires_at: Option<Timestamp> = sqlx::query_scalar(pool.sql(&ADVANCE))
                .bind(id)
                .bind(db_int(from))
                .bind(db_int(by))
                .bind(ttl)
                .fetch_optional(&mut *tx)
                .await?;
            if expires_at.is_some() {
                if !advance.parts.is_empty() {
                    sqlx::query(pool.sql(&FORGET_PIECES)).bind(id).execute(&mut *tx).await?;
                }
                for (start, e_tag) in advance.parts {
                    let query = sqlx::query(pool.sql(&RECORD_PART)).bind(id).bind(db_int(*start)).bind(e_tag);
                    query.execute(&mut *tx).await?;
                }
                if let Some(digest) = advance.digest {
                    sqlx::query(pool.sql(&RECORD_DIGEST)).bind(id).bind(digest).execute(&mut *tx).await?;
                }
                if let Some((start, piece)) = advance.piece {
                    let query = sqlx::query(pool.sql(&RECORD_PIECE)).bind(id).bind(db_int(start)).bind(piece);
                    query.execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
            Ok(expires_at)
        })
    }

    /// The upload's recorded pieces in offset order (none in the local store).
    pub async fn pieces(&self, id: i64) -> Result<Vec<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&PIECES)).bind(id).fetch_all(pool).await)
    }

    /// Records the digests of a complete upload.
    pub async fn finish(&self, id: i64, stored: &StoredFile) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&FINISH))
                .bind(id)
                .bind(&stored.sha256)
                .bind(i64::from(stored.crc32))
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    pub async fn delete(&self, id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&DELETE)).bind(id).execute(pool).await.map(drop))
    }

    /// Ends an upload now: it answers 404, no share can claim it any more, and the GC collects
    /// it. False when it had ended already, or a share claimed it first.
    pub async fn end(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&END)).bind(id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    /// Ends every upload of request share `share_id` now (it was answered or ended): each then
    /// answers 404, and the GC removes its bytes.
    pub async fn expire_all_of_request(&self, share_id: i64) -> Result<u64, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&EXPIRE_ALL_OF_REQUEST)).bind(share_id).execute(pool).await.map(|r| r.rows_affected())
        })
    }

    /// Ends every upload of a sender now (an admin disabled them).
    pub async fn expire_all_of(&self, owner_id: i64) -> Result<u64, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&EXPIRE_ALL_OF_OWNER)).bind(owner_id).execute(pool).await.map(|r| r.rows_affected())
        })
    }

    /// Expired uploads for the GC, oldest first: (id, storage key).
    pub async fn expired(&self, limit: u32) -> Result<Vec<(i64, String)>, sqlx::Error> {
        let limit = i64::from(limit);
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DESTROY_EXPIRED_KEYS)).execute(pool).await?;
            sqlx::query_as(pool.sql(&EXPIRED)).bind(limit).fetch_all(pool).await
        })
    }

    /// Deletes an expired upload's row once its files are gone; false when another collector did.
    pub async fn delete_expired(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DELETE_EXPIRED)).bind(id).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }
}
