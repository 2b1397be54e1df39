//! Leases on deletion cases: which open cases are due, and which runner works on one. A lease
//! runs out on its own, so a case whose runner died is taken up again; a runner restarted under
//! the same owner name takes its own cases back at once.

use std::time::Duration;

use super::cases::DeletionCases;
use crate::{
    db::{Dialect, Sql, seconds},
    on_db, sql,
};

const DUE: Sql = sql!(
    "SELECT id FROM deletion_cases
      WHERE state NOT IN ('completed', 'failed') AND next_attempt_at <= " now "
        AND (lease_until IS NULL OR lease_until < " now ")
      ORDER BY next_attempt_at, id LIMIT $1"
);
const CLAIM: Sql = sql!(
    "UPDATE deletion_cases SET lease_owner = $2, lease_until = " now " + " secs("$3") "
      WHERE id = $1 AND state NOT IN ('completed', 'failed')
        AND (lease_until IS NULL OR lease_until < " now " OR lease_owner = $2)"
);
const RELEASE: Sql = sql!(
    "UPDATE deletion_cases SET lease_owner = NULL, lease_until = NULL,
            next_attempt_at = " now " + " secs("$3") "
      WHERE id = $1 AND lease_owner = $2"
);

impl DeletionCases {
    /// Open cases that are due and not held by a live lease, oldest due first.
    pub async fn due(&self, limit: i64) -> Result<Vec<i64>, sqlx::Error> {
        on_db!(self.db(), |pool| sqlx::query_scalar(pool.sql(&DUE)).bind(limit).fetch_all(pool).await)
    }

    /// Takes (or renews) the lease of an open case; false when another runner holds it.
    pub async fn claim(&self, id: i64, owner: &str, lease: Duration) -> Result<bool, sqlx::Error> {
        let lease = seconds(lease);
        let done = on_db!(self.db(), |pool| {
            sqlx::query(pool.sql(&CLAIM)).bind(id).bind(owner).bind(lease).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Lets the lease go and says when the case is next due.
    pub async fn release(&self, id: i64, owner: &str, due_in: Duration) -> Result<(), sqlx::Error> {
        let due_in = seconds(due_in);
        on_db!(self.db(), |pool| {
            sqlx::query(pool.sql(&RELEASE)).bind(id).bind(owner).bind(due_in).execute(pool).await?;
        });
        Ok(())
    }
}
