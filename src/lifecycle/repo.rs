//! Seed 000's transitions, each one conditional UPDATE whose WHERE holds the whole precondition:
//! active → consumed (claim), active|consumed → purged (GC), never backwards.

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    i18n::Lang,
    on_db, retry,
    session::Session,
    share::writes,
    sql,
};

/// A share the GC may collect; it closes the share before it reads the files to delete.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PurgeCandidate {
    pub id: i64,
    pub handover_id: i64,
}

/// A stored file the GC deletes, then marks purged.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DoomedFile {
    pub id: i64,
    pub storage_key: String,
}

/// A claimed share's handover, as the session that claimed it may fetch it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Claimed {
    pub share_id: i64,
    /// The language the share was made in: its zone dates the archive of several files.
    pub lang: Lang,
    /// When the handover was made.
    pub created_at: Timestamp,
    /// When its delivery began (the first byte, or the note shown): the grace runs from then.
    pub delivery_started_at: Option<Timestamp>,
    /// Its files in order (none for a secret note).
    #[sqlx(skip)]
    pub files: Vec<ClaimedFile>,
}

/// A stored file of a claimed handover.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ClaimedFile {
    /// Its place in the handover (0 for the first).
    pub position: i32,
    pub storage_key: String,
    pub original_name: String,
    pub size_bytes: i64,
    /// Hex SHA-256 of the content: the strong validator (ETag) of every answer.
    pub sha256: String,
    /// The CRC-32 taken at upload (none for files stored before it was), for the archive.
    pub crc32: Option<i64>,
}

/// A stored file the database still needs, as it recorded it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LiveFile {
    pub storage_key: String,
    pub size_bytes: i64,
    pub sha256: String,
    /// Encrypted files are stored longer than `size_bytes`, and `sha256` is their plaintext's.
    pub sealing: crate::storage::sealed::Sealing,
}

/// Files still needed among the keys in $1 (see `live_files`).
const LIVE_FILES: Sql = sql!(
    "WITH wanted AS (SELECT " { sqlite: "value FROM json_each($1)", postgres: "unnest($1::text[])" } ")
     SELECT f.storage_key, f.size_bytes, f.sha256, f.sealing FROM files f
      WHERE f.purged_at IS NULL AND f.storage_key IN (SELECT * FROM wanted)
     UNION ALL
     SELECT storage_key, upload_length, sha256, sealing FROM uploads
      WHERE sha256 IS NOT NULL AND storage_key IN (SELECT * FROM wanted)"
);

/// Keys among $1 that a row still needs (see `known_storage_keys`).
const NEEDED_KEYS: Sql = sql!(
    "WITH wanted AS (SELECT " { sqlite: "value FROM json_each($1)", postgres: "unnest($1::text[])" } ")
     SELECT f.storage_key FROM files f WHERE f.purged_at IS NULL AND f.storage_key IN (SELECT * FROM wanted)
     UNION ALL
     SELECT storage_key FROM uploads WHERE storage_key IN (SELECT * FROM wanted)"
);

/// The claimed handover a session may fetch ($1 the token hash, $2 the session, $3 the hash of the
/// cookie the request came with, $4 the grace): as the grant check, a request on a cookie from
/// before a regeneration gets nothing. Expiry does not end it: the claim was made in time, and
/// the grace alone bounds the delivery. The grace starts at the first byte sent to the claiming
/// session or, while none was, at the share's expiry, so a claim whose GET comes late keeps its
/// file: `COALESCE(s.delivery_started_at, s.expires_at)`, the GC's expression below and the key of
/// `shares_delivering_idx`, letter for letter (a planner matches an expression index by its text).
const CLAIMED_BY: Sql = sql!(
    "SELECT s.id AS share_id, s.lang, h.created_at, s.delivery_started_at
       FROM shares s JOIN handovers h ON h.id = s.handover_id
       JOIN sessions c ON c.id = s.claimed_session_id
      WHERE s.token_hash = $1 AND s.claimed_session_id = $2 AND c.id_hash = $3 AND s.status = 'consumed'
        AND COALESCE(s.delivery_started_at, s.expires_at) > " now " - " secs("$4")
);

/// The files of the handover of share $1, in order.
const CLAIMED_FILES: Sql = Sql::same(
    "SELECT f.position, f.storage_key, f.original_name, f.size_bytes, f.sha256, f.crc32
       FROM shares s JOIN files f ON f.handover_id = s.handover_id
      WHERE s.id = $1 ORDER BY f.position",
);

/// A statement over the shares whose file the GC may delete now ($1 the delivery grace in
/// seconds): expired active shares (`shares_expiry_idx`), then consumed shares past the grace
/// (`shares_delivering_idx`), each a range scan that stops at "now", so an empty pass reads no
/// live share. Written once for the pass and for its backlog: `$open` comes before the first
/// part's `FROM`, `$between` between the parts, the rest after the second.
macro_rules! purgeable {
    ($open:literal, $between:literal, $($close:tt)*) => {
        sql!(
            $open "
       FROM shares s
      WHERE s.status = 'active' AND s.expires_at <= " now "
        AND (s.next_purge_attempt_at IS NULL OR s.next_purge_attempt_at <= " now ")" $between "
       FROM shares s
      WHERE s.status = 'consumed' AND COALESCE(s.delivery_started_at, s.expires_at) <= " now " - " secs("$1") "
        AND (s.next_purge_attempt_at IS NULL OR s.next_purge_attempt_at <= " now ")" $($close)*
        )
    };
}

/// The GC's candidate query ($2 the batch). No ORDER BY: the order of a batch does not matter
/// (shares in a retry backoff are left out until it ends), and a sort would cost an empty pass a
/// third more inside PostgreSQL.
const PURGEABLE: Sql = purgeable!(
    "SELECT s.id, s.handover_id",
    "
     UNION ALL SELECT s.id, s.handover_id",
    "
      LIMIT $2"
);
/// How many shares wait for the GC now (for the metrics).
const BACKLOG: Sql = purgeable!("SELECT (SELECT COUNT(*)", ") + (SELECT COUNT(*)", ")");
/// The candidate query on SQLite, public so the test of its plan explains this very statement.
#[doc(hidden)]
pub const PURGEABLE_SQLITE: &str = PURGEABLE.sqlite;
/// The same on PostgreSQL.
#[doc(hidden)]
pub const PURGEABLE_POSTGRES: &str = PURGEABLE.postgres;

/// The collector closes share $1 before it reads the files it deletes ($2 the delivery grace), while
/// the share is still collectable (the candidate query's two parts, checked again). From then on
/// nothing commits into it: an upload, a request's finish and a claim each require `closed_at IS
/// NULL`. Each of those holds the share's row until it commits (PostgreSQL's row lock, SQLite's one
/// writer), so this waits for one in flight and judges what it left: an upload that committed is
/// among the files read next, and a finish that committed made the request unexpired, so nothing
/// is closed and its files stay. Kept from the first close, as a share whose delete failed is
/// closed again on each retry.
const CLOSE: Sql = sql!(
    "UPDATE shares SET closed_at = COALESCE(closed_at, " now ")
      WHERE id = $1 AND ((status = 'active' AND expires_at <= " now ")
         OR (status = 'consumed' AND COALESCE(delivery_started_at, expires_at) <= " now " - " secs("$2") "))"
);

/// A statement over handover $1 that holds only while no share of it but $2 still needs what it
/// hands over ($3 the delivery grace): none active and unexpired, none consumed and within its grace.
/// Whether a share needs it only ever turns from yes to no, so two collectors on the last two
/// shares may both see "unneeded" (a delete finds the file gone, a note already destroyed).
macro_rules! unneeded {
    ([$($head:tt)+], $tail:literal) => {
        sql!(
            $($head)+ "
        AND NOT EXISTS (SELECT 1 FROM shares o WHERE o.handover_id = $1 AND o.id <> $2
                          AND ((o.status = 'active' AND o.expires_at > " now ")
                            OR (o.status = 'consumed'
                                AND COALESCE(o.delivery_started_at, o.expires_at) > " now " - " secs("$3") ")))" $tail
        )
    };
}

/// The files the GC deletes for share $2: its handover's, not purged yet, unless another share
/// still needs them; `MARK_FILE_PURGED` lets one collector mark each file.
const DOOMED_FILES: Sql = unneeded!(
    ["SELECT f.id, f.storage_key FROM files f WHERE f.handover_id = $1 AND f.purged_at IS NULL"],
    " ORDER BY f.position"
);
/// The handover's secret note is destroyed, not hidden, once no share needs it: its own key and
/// its ciphertext together, so nothing the row kept opens again (a backup taken after this holds
/// neither, and a copy of the ciphertext elsewhere lacks its key).
const DESTROY_NOTE: Sql = unneeded!(
    ["UPDATE handovers SET note_key = NULL, note_sealed = NULL WHERE id = $1 AND note_sealed IS NOT NULL"],
    ""
);
/// Destroys the data keys of the files that `$where` selects, recording when: every deletion path
/// (the GC, the scan's refusal, a deletion case) runs this before it deletes any byte, so from then
/// on no copy of the bytes anywhere can be read, whether or not the delete that follows succeeds.
macro_rules! destroy_file_keys {
    (unneeded: $($where:tt)+) => {
        unneeded!(["UPDATE files SET wrapped_key = NULL, key_destroyed_at = " now "
                     WHERE wrapped_key IS NOT NULL AND " $($where)+], "")
    };
    ($($where:tt)+) => {
        $crate::sql!(
            "UPDATE files SET wrapped_key = NULL, key_destroyed_at = " now "
              WHERE wrapped_key IS NOT NULL AND " $($where)+
        )
    };
}
pub(crate) use destroy_file_keys;

/// The data keys of the handover's encrypted files, once no share needs them, in the one
/// statement that holds that precondition.
const DESTROY_FILE_KEYS: Sql = destroy_file_keys!(unneeded: "handover_id = $1 AND purged_at IS NULL");
/// One file's data key (the scan refused it), before its bytes go.
const DESTROY_FILE_KEY: Sql = destroy_file_keys!("id = $1 AND purged_at IS NULL");
/// A file whose bytes are gone. A purged file keeps no key, whoever deleted its bytes (the GC and
/// the scanner destroyed it before; a path that did not is covered here), so a copy of the bytes
/// put back never opens.
const MARK_FILE_PURGED: Sql = sql!(
    "UPDATE files SET purged_at = " now ", wrapped_key = NULL,
            key_destroyed_at = CASE WHEN wrapped_key IS NULL THEN key_destroyed_at ELSE " now " END
      WHERE id = $1 AND purged_at IS NULL"
);

/// A failed delete's backoff doubles per failure up to this many times the first one.
const PURGE_BACKOFF_DOUBLINGS: u32 = 6;

#[derive(Clone, Debug)]
pub struct LifecycleRepository {
    db: Db,
    /// How long a consumed file is kept for the download in progress.
    delivery_grace: Duration,
    /// First backoff after a failed delete; doubles per failure, capped at 2^6 times.
    purge_retry_base: Duration,
}

impl LifecycleRepository {
    pub fn new(db: Db, delivery_grace: Duration, purge_retry_base: Duration) -> Self {
        Self { db, delivery_grace, purge_retry_base }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// How long a claimed share's files (or note) stay for the claimer once delivery began.
    pub fn delivery_grace(&self) -> Duration {
        self.delivery_grace
    }

    /// Claims the one download for the session `claimed_by` (the only one that may then fetch
    /// the bytes): true for exactly one caller, only while active and unexpired. Runs on its own
    /// (autocommit), so it is committed before the first byte is sent.
    pub async fn mark_consumed(&self, share_id: i64, claimed_by: Option<i64>) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&writes::MARK_CONSUMED))
                .bind(share_id)
                .bind(claimed_by)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// The handover of the share with this token hash, if `session` claimed it and the delivery
    /// grace is still running (the GC's complement: it purges from the grace's end on).
    pub async fn claimed(&self, token_hash: &str, session: &Session) -> Result<Option<Claimed>, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        on_db!(&self.db, |pool| {
            let claimed: Option<Claimed> = sqlx::query_as(pool.sql(&CLAIMED_BY))
                .bind(token_hash)
                .bind(session.id)
                .bind(&session.id_hash)
                .bind(grace)
                .fetch_optional(pool)
                .await?;
            let Some(claimed) = claimed else { return Ok(None) };
            let files: Vec<ClaimedFile> =
                sqlx::query_as(pool.sql(&CLAIMED_FILES)).bind(claimed.share_id).fetch_all(pool).await?;
            Ok(Some(Claimed { files, ..claimed }))
        })
    }

    /// Collectable shares: consumed and past the delivery grace, or still active and expired;
    /// rows backing off after a failed delete wait; in no particular order.
    pub async fn select_purgeable(&self, limit: u32) -> Result<Vec<PurgeCandidate>, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        let limit = i64::from(limit);
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&PURGEABLE)).bind(grace).bind(limit).fetch_all(pool).await)
    }

    /// Closes a candidate (see `CLOSE`) and then answers the stored files to delete: its
    /// handover's files not purged yet, or none while another share of the handover still needs
    /// them. `None` when it stopped being collectable (a request answered meanwhile): keep all.
    pub async fn close(&self, candidate: &PurgeCandidate) -> Result<Option<Vec<DoomedFile>>, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        on_db!(&self.db, |pool| {
            let closed = sqlx::query(pool.sql(&CLOSE)).bind(candidate.id).bind(grace).execute(pool).await?;
            if closed.rows_affected() != 1 {
                return Ok(None);
            }
            let files = sqlx::query_as(pool.sql(&DOOMED_FILES))
                .bind(candidate.handover_id)
                .bind(candidate.id)
                .bind(grace)
                .fetch_all(pool)
                .await?;
            Ok(Some(files))
        })
    }

    /// Destroys the secret note of share `share_id`'s handover unless another share still needs it.
    pub async fn destroy_note(&self, handover_id: i64, share_id: i64) -> Result<(), sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DESTROY_NOTE)).bind(handover_id).bind(share_id).bind(grace).execute(pool).await?;
        });
        Ok(())
    }

    /// Destroys the data keys of share `share_id`'s handover's encrypted files unless another share
    /// still needs them; answers how many it destroyed.
    pub async fn destroy_file_keys(&self, handover_id: i64, share_id: i64) -> Result<u64, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        let destroyed = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DESTROY_FILE_KEYS))
                .bind(handover_id)
                .bind(share_id)
                .bind(grace)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(destroyed)
    }

    /// Destroys one file's data key (if it still has one) before its bytes are deleted.
    pub async fn destroy_file_key(&self, file_id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&DESTROY_FILE_KEY)).bind(file_id).execute(pool).await?;
        });
        Ok(())
    }

    /// Marks a file purged once its bytes are gone; false when another collector did first.
    pub async fn mark_file_purged(&self, file_id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&MARK_FILE_PURGED)).bind(file_id).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// How many shares the GC could collect now (its backlog).
    pub async fn backlog(&self) -> Result<i64, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&BACKLOG)).bind(grace).fetch_one(pool).await)
    }

    /// Marks a share purged once its file is gone. Re-checks eligibility, so an active,
    /// unexpired share can never be purged by this (no orphaned files), and only one caller wins.
    pub async fn mark_purged(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&writes::MARK_PURGED)).bind(share_id).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Counts a failed delete and backs the row off: base × 2^failures before, capped at 2^6 times
    /// the base. The count and the backoff it sets are one transaction.
    pub async fn mark_purge_failed(&self, share_id: i64) -> Result<(), sqlx::Error> {
        let base = self.purge_retry_base;
        let cap = base.saturating_mul(1 << PURGE_BACKOFF_DOUBLINGS);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let before: Option<i32> = sqlx::query_scalar(pool.sql(&writes::COUNT_PURGE_FAILURE))
                .bind(share_id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(before) = before {
                let wait = retry::backoff(base, u32::try_from(before).unwrap_or(0), cap);
                sqlx::query(pool.sql(&writes::BACK_OFF_PURGE))
                    .bind(share_id)
                    .bind(seconds(wait))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        })
    }

    /// Ends an active share at once: it expires now and becomes collectable like any expired share.
    pub async fn revoke(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&writes::REVOKE))
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done == 1)
    }

    /// Gives an active share a new link token (the old link stops working) and lifts a lock.
    pub async fn renew_link(&self, share_id: i64, token_hash: &str) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&writes::RENEW_LINK))
                .bind(share_id)
                .bind(token_hash)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// Lifts the wrong-code lock of an active share.
    pub async fn unlock(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&writes::UNLOCK))
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done == 1)
    }

    /// Of these storage keys, those of files still to be kept: a share's file not purged yet or a
    /// completed upload's, with the size and digest the database holds (for `storage migrate`).
    /// The keys bind as a JSON list on SQLite, which has no arrays, and as an array on PostgreSQL.
    pub async fn live_files(&self, keys: &[String]) -> Result<Vec<LiveFile>, sqlx::Error> {
        match &self.db {
            Db::Sqlite(pool) => {
                let list = serde_json::to_string(keys).expect("strings serialise");
                sqlx::query_as(pool.sql(&LIVE_FILES)).bind(list).fetch_all(pool).await
            }
            Db::Postgres(pool) => sqlx::query_as(pool.sql(&LIVE_FILES)).bind(keys).fetch_all(pool).await,
        }
    }

    /// Which of these storage keys a row still needs (for the leftover sweep): a file of a share
    /// not purged yet, or any upload. A purged share's file is a leftover wherever it comes back
    /// from (a restored bucket, a `storage migrate` killed mid-copy). One query for the whole
    /// batch; the keys bind as for `live_files`.
    pub async fn known_storage_keys(&self, keys: &[String]) -> Result<Vec<String>, sqlx::Error> {
        match &self.db {
            Db::Sqlite(pool) => {
                let list = serde_json::to_string(keys).expect("strings serialise");
                sqlx::query_scalar(pool.sql(&NEEDED_KEYS)).bind(list).fetch_all(pool).await
            }
            Db::Postgres(pool) => sqlx::query_scalar(pool.sql(&NEEDED_KEYS)).bind(keys).fetch_all(pool).await,
        }
    }
}
