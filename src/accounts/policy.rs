//! The team's sign-in policy, one row an admin sets: whether every password sign-in needs a
//! second factor, and whether passwords are allowed at all (off: single sign-on only; the CLI
//! turns them back on).

use crate::{
    db::{Db, Dialect, Sql},
    on_db, sql,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct SignInPolicy {
    pub require_second_factor: bool,
    pub passwords_allowed: bool,
}

#[derive(Clone, Debug)]
pub struct SignInPolicies {
    db: Db,
}

const SET: Sql = sql!(
    "UPDATE sign_in_policy
        SET require_second_factor = $1, passwords_allowed = $2, updated_at = " now ", updated_by = $3
      WHERE id = 1"
);

impl SignInPolicies {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    pub async fn current(&self) -> Result<SignInPolicy, sqlx::Error> {
        const SQL: &str = "SELECT require_second_factor, passwords_allowed FROM sign_in_policy WHERE id = 1";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).fetch_one(pool).await)
    }

    /// Replaces the policy; `by`: the admin (None: the CLI).
    pub async fn set(&self, policy: SignInPolicy, by: Option<i64>) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SET))
                .bind(policy.require_second_factor)
                .bind(policy.passwords_allowed)
                .bind(by)
                .execute(pool)
                .await
                .map(drop)
        })
    }
}
