//! The scan state of stored files: which are due, the claim that keeps two workers off one file,
//! and each outcome as one conditional UPDATE on a still-pending row.

use std::time::Duration;

use super::{RefusalReason, ScanState};
use crate::{
    db::{Db, Dialect, Sql, seconds},
    i18n::Lang,
    on_db, sql,
};

/// A pending file a worker took: what to read.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DueFile {
    pub id: i64,
    pub storage_key: String,
    /// Scans clamd did not answer before this one.
    pub scan_attempts: i32,
}

/// Pending files whose wait is over and whose bytes are still stored, longest waiting first.
const DUE_IDS: Sql = sql!(
    "SELECT id FROM files
      WHERE scan_state = 'pending' AND purged_at IS NULL AND (scan_next_at IS NULL OR scan_next_at <= " now ")
      ORDER BY scan_next_at, id LIMIT $1"
);
/// Takes a due file for `$2` seconds: another worker (here or in another instance) passes it by
/// until then, and a worker that died mid-scan leaves it to be taken again afterwards.
const CLAIM: Sql = sql!(
    "UPDATE files SET scan_next_at = " now " + " secs("$2") "
      WHERE id = $1 AND scan_state = 'pending' AND (scan_next_at IS NULL OR scan_next_at <= " now ")
      RETURNING id, storage_key, scan_attempts"
);
/// clamd's verdict, final: the file leaves 'pending' once, whichever worker answers first.
const FINISH: Sql = sql!(
    "UPDATE files SET scan_state = $2, scan_finding = $3, scanned_at = " now ", scan_next_at = NULL
      WHERE id = $1 AND scan_state = 'pending'"
);
/// clamd gave no verdict: wait `$4` seconds and try again, or refuse the file once this was the
/// last attempt allowed (`$3`). SET reads the row as it was: `scan_attempts` is the old count.
const FAILED: Sql = sql!(
    "UPDATE files
        SET scan_state = CASE WHEN scan_attempts + 1 >= $3 THEN 'refused' ELSE 'pending' END,
            scan_finding = CASE WHEN scan_attempts + 1 >= $3 THEN $5 ELSE $2 END,
            scanned_at = CASE WHEN scan_attempts + 1 >= $3 THEN " now " ELSE NULL END,
            scan_next_at = " now " + " secs("$4") ",
            scan_attempts = scan_attempts + 1
      WHERE id = $1 AND scan_state = 'pending'
      RETURNING scan_state"
);
/// Outbound handovers with a refused file and a share still open. A request's (inbound)
/// handover stays open: only its refused file goes (`REFUSED_INBOUND`).
const REFUSED_HANDOVERS_OPEN: Sql = sql!(
    "SELECT DISTINCT f.handover_id FROM files f JOIN shares s ON s.handover_id = f.handover_id
      WHERE f.scan_state IN ('infected', 'refused') AND s.kind = 'delivery' AND s.status = 'active'
        AND s.expires_at > " now
);
/// Outbound handovers with a refused file whose sender was not told yet (a request's uploader
/// reads it on the upload page, its sender on the request's page and timeline).
const UNTOLD_HANDOVERS: &str = "SELECT DISTINCT handover_id FROM files
                                 WHERE scan_state IN ('infected', 'refused') AND scan_told_at IS NULL
                                   AND handover_id IS NOT NULL
                                   AND NOT EXISTS (SELECT 1 FROM file_requests r WHERE r.handover_id = files.handover_id)";
/// A request's refused files whose bytes are still stored, with the request's share.
const REFUSED_INBOUND: &str = "SELECT f.id, f.storage_key, f.position, s.id AS share_id
                                 FROM files f JOIN shares s ON s.handover_id = f.handover_id
                                WHERE s.kind = 'request' AND f.scan_state IN ('infected', 'refused')
                                  AND f.purged_at IS NULL ORDER BY f.id";
/// Where the notice of a refused handover goes: its sender, in their language, with the page of
/// its first share.
const REFUSAL_TARGET: &str = "SELECT u.email AS sender_email, u.lang AS sender_lang,
                                     (SELECT MIN(s.id) FROM shares s WHERE s.handover_id = h.id) AS share_id
                                FROM handovers h JOIN users u ON u.id = h.sender_id WHERE h.id = $1";
/// Takes the handover's refused files not told yet: one UPDATE, so whichever worker gets them
/// tells the sender, once.
const TAKE_UNTOLD: Sql = sql!(
    "UPDATE files SET scan_told_at = " now "
      WHERE handover_id = $1 AND scan_state IN ('infected', 'refused') AND scan_told_at IS NULL
      RETURNING position, original_name, scan_state, scan_finding"
);
/// Files held now: pending and still stored.
const BACKLOG: Sql = Sql::same("SELECT COUNT(*) FROM files WHERE scan_state = 'pending' AND purged_at IS NULL");

/// A request's refused file, still stored: its bytes are deleted, then it is marked purged.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RefusedInbound {
    pub id: i64,
    pub storage_key: String,
    /// Its place in the handover, by which the timeline's event names it.
    pub position: i32,
    /// The request's share, whose timeline records the refusal.
    pub share_id: i64,
}

/// The sender of a refused handover, and its refused files.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RefusalTarget {
    pub sender_email: String,
    pub sender_lang: Lang,
    pub share_id: Option<i64>,
    /// Each refused file: its name, its state and clamd's finding.
    #[sqlx(skip)]
    pub files: Vec<(String, ScanState, Option<String>)>,
}

#[derive(Clone, Debug)]
pub struct ScanFiles {
    db: Db,
}

impl ScanFiles {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Takes up to `limit` due files for `lease`, one conditional UPDATE each.
    pub async fn claim_due(&self, limit: u32, lease: Duration) -> Result<Vec<DueFile>, sqlx::Error> {
        let (limit, lease) = (i64::from(limit), seconds(lease));
        Ok(on_db!(&self.db, |pool| {
            let ids: Vec<i64> = sqlx::query_scalar(pool.sql(&DUE_IDS)).bind(limit).fetch_all(pool).await?;
            let mut claimed = Vec::with_capacity(ids.len());
            for id in ids {
                let rows = sqlx::query_as(pool.sql(&CLAIM)).bind(id).bind(lease).fetch_all(pool).await?;
                claimed.extend(crate::db::written_row(rows));
            }
            claimed
        }))
    }

    /// Records a final state; false when the file was no longer pending.
    pub async fn finish(&self, id: i64, state: ScanState, finding: Option<&str>) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&FINISH)).bind(id).bind(state).bind(finding).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Records a scan clamd did not answer (`error_class`), with the wait before the next one;
    /// answers the file's state now (`Refused` once `max_attempts` is reached, `None` when it was
    /// no longer pending).
    pub async fn failed(
        &self,
        id: i64,
        error_class: &str,
        max_attempts: u32,
        wait: Duration,
    ) -> Result<Option<ScanState>, sqlx::Error> {
        let max_attempts = i32::try_from(max_attempts).unwrap_or(i32::MAX);
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&FAILED))
                .bind(id)
                .bind(error_class)
                .bind(max_attempts)
                .bind(seconds(wait))
                .bind(RefusalReason::NoAnswer)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)
        })
    }

    /// The handovers whose shares a refused file must still end.
    pub async fn refused_handovers_open(&self) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&REFUSED_HANDOVERS_OPEN)).fetch_all(pool).await)
    }

    /// The refused files of requests whose bytes are still to be deleted.
    pub async fn refused_inbound(&self) -> Result<Vec<RefusedInbound>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(REFUSED_INBOUND).fetch_all(pool).await)
    }

    /// The handovers whose sender is still to be told of a refused file.
    pub async fn untold_handovers(&self) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(UNTOLD_HANDOVERS).fetch_all(pool).await)
    }

    /// Takes the refused files of handover `handover_id` not told yet, with whom to tell; `None`
    /// when another worker took them first.
    pub async fn take_untold(&self, handover_id: i64) -> Result<Option<RefusalTarget>, sqlx::Error> {
        let mut files: Vec<(i32, String, ScanState, Option<String>)> =
            on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&TAKE_UNTOLD)).bind(handover_id).fetch_all(pool).await?);
        if files.is_empty() {
            return Ok(None);
        }
        // RETURNING keeps no order.
        files.sort_by_key(|file| file.0);
        let target: Option<RefusalTarget> =
            on_db!(&self.db, |pool| sqlx::query_as(REFUSAL_TARGET).bind(handover_id).fetch_optional(pool).await?);
        let files = files.into_iter().map(|(_, name, state, finding)| (name, state, finding)).collect();
        Ok(target.map(|target| RefusalTarget { files, ..target }))
    }

    /// How many files are held waiting for a verdict.
    pub async fn backlog(&self) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&BACKLOG)).fetch_one(pool).await)
    }
}
