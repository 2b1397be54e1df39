//! Seed 000's transitions, each one conditional UPDATE whose WHERE holds the whole precondition:
//! active → consumed (claim), active|consumed → purged (GC), never backwards. Both dialects side
//! by side.

use std::time::Duration;

use crate::db::{Db, seconds};

/// A share the GC may collect, with the key of its stored file.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PurgeCandidate {
    pub id: i64,
    pub storage_key: String,
}

/// The GC's candidate query on SQLite ($1 the delivery grace in seconds, $2 the batch). Public
/// so the test of its plan explains this very statement.
#[doc(hidden)]
pub const PURGEABLE_SQLITE: &str = "SELECT s.id, f.storage_key
       FROM shares s JOIN files f ON f.id = s.file_id
      WHERE s.status <> 'purged'
        AND (s.next_purge_attempt_at IS NULL OR s.next_purge_attempt_at <= unixepoch('subsec'))
        AND ((s.status = 'consumed' AND s.consumed_at <= unixepoch('subsec') - $1)
             OR (s.status <> 'consumed' AND s.expires_at <= unixepoch('subsec')))
      ORDER BY s.next_purge_attempt_at, s.id
      LIMIT $2";

/// The same on PostgreSQL, whose index and ORDER BY name NULLS FIRST.
#[doc(hidden)]
pub const PURGEABLE_POSTGRES: &str = "SELECT s.id, f.storage_key
       FROM shares s JOIN files f ON f.id = s.file_id
      WHERE s.status <> 'purged'
        AND (s.next_purge_attempt_at IS NULL OR s.next_purge_attempt_at <= now())
        AND ((s.status = 'consumed' AND s.consumed_at <= now() - make_interval(secs => $1))
             OR (s.status <> 'consumed' AND s.expires_at <= now()))
      ORDER BY s.next_purge_attempt_at NULLS FIRST, s.id
      LIMIT $2";

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

    /// Claims the one download: true for exactly one caller, only while active and unexpired.
    /// Runs on its own (autocommit), so it is committed before the first byte is sent.
    pub fn db(&self) -> &Db {
        &self.db
    }

    pub async fn mark_consumed(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE shares SET status = 'consumed', consumed_at = unixepoch('subsec')
                  WHERE id = $1 AND status = 'active' AND expires_at > unixepoch('subsec')",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE shares SET status = 'consumed', consumed_at = now()
                  WHERE id = $1 AND status = 'active' AND expires_at > now()",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Collectable shares: consumed and past the delivery grace, or still active and expired;
    /// rows backing off after a failed delete wait; oldest attempt first.
    pub async fn select_purgeable(&self, limit: u32) -> Result<Vec<PurgeCandidate>, sqlx::Error> {
        let grace = seconds(self.delivery_grace);
        let limit = i64::from(limit);
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(PURGEABLE_SQLITE).bind(grace).bind(limit).fetch_all(pool).await,
            Db::Postgres(pool) => sqlx::query_as(PURGEABLE_POSTGRES).bind(grace).bind(limit).fetch_all(pool).await,
        }
    }

    /// Marks a share purged once its file is gone. Re-checks eligibility, so an active,
    /// unexpired share can never be purged by this (no orphaned files), and only one caller wins.
    pub async fn mark_purged(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE shares SET status = 'purged', purged_at = unixepoch('subsec')
                  WHERE id = $1 AND status <> 'purged'
                    AND (status = 'consumed' OR expires_at <= unixepoch('subsec'))",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE shares SET status = 'purged', purged_at = now()
                  WHERE id = $1 AND status <> 'purged'
                    AND (status = 'consumed' OR expires_at <= now())",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Counts a failed delete and backs the row off: base × 2^min(attempts, 6).
    pub async fn mark_purge_failed(&self, share_id: i64) -> Result<(), sqlx::Error> {
        let base = seconds(self.purge_retry_base);
        match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE shares
                    SET purge_attempts = purge_attempts + 1,
                        next_purge_attempt_at = unixepoch('subsec') + $2 * (1 << min(purge_attempts, 6))
                  WHERE id = $1 AND status <> 'purged'",
            )
            .bind(share_id)
            .bind(base)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE shares
                    SET purge_attempts = purge_attempts + 1,
                        next_purge_attempt_at = now() + make_interval(secs => $2 * power(2, least(purge_attempts, 6)))
                  WHERE id = $1 AND status <> 'purged'",
            )
            .bind(share_id)
            .bind(base)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(())
    }

    /// Ends an active share at once: it expires now and becomes collectable like any expired share.
    pub async fn revoke(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE shares SET revoked_at = unixepoch('subsec'), expires_at = unixepoch('subsec')
                  WHERE id = $1 AND status = 'active' AND expires_at > unixepoch('subsec')",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE shares SET revoked_at = now(), expires_at = now()
                  WHERE id = $1 AND status = 'active' AND expires_at > now()",
            )
            .bind(share_id)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Gives an active share a new link token (the old link stops working) and lifts a lock.
    pub async fn renew_link(&self, share_id: i64, token_hash: &str) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE shares SET token_hash = $2, locked_at = NULL, wrong_codes = 0
                  WHERE id = $1 AND status = 'active' AND expires_at > unixepoch('subsec')",
            )
            .bind(share_id)
            .bind(token_hash)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE shares SET token_hash = $2, locked_at = NULL, wrong_codes = 0
                  WHERE id = $1 AND status = 'active' AND expires_at > now()",
            )
            .bind(share_id)
            .bind(token_hash)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Lifts the wrong-code lock of an active share.
    pub async fn unlock(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        const SQL: &str = "UPDATE shares SET locked_at = NULL, wrong_codes = 0 WHERE id = $1 AND locked_at IS NOT NULL AND status = 'active'";
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(SQL).bind(share_id).execute(pool).await?.rows_affected(),
            Db::Postgres(pool) => sqlx::query(SQL).bind(share_id).execute(pool).await?.rows_affected(),
        };
        Ok(done == 1)
    }

    /// Which of these storage keys some file row still names (for the leftover sweep): one query
    /// for the whole batch. PostgreSQL takes the keys as an array; SQLite has no arrays and takes
    /// them as a JSON list.
    pub async fn known_storage_keys(&self, keys: &[String]) -> Result<Vec<String>, sqlx::Error> {
        match &self.db {
            Db::Sqlite(pool) => {
                let list = serde_json::to_string(keys).expect("strings serialise");
                sqlx::query_scalar(
                    "SELECT storage_key FROM files WHERE storage_key IN (SELECT value FROM json_each($1))",
                )
                .bind(list)
                .fetch_all(pool)
                .await
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar("SELECT storage_key FROM files WHERE storage_key = ANY($1)")
                    .bind(keys)
                    .fetch_all(pool)
                    .await
            }
        }
    }
}
