//! The provider's subject (`sub`) stored with an account at its first single sign-on. The address
//! finds the account; the subject proves it is still the same person at the provider.

use crate::{
    db::{Db, is_unique_violation},
    on_db,
};

/// What linking a subject to an account came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Link {
    /// The account had no subject and now has this one.
    Linked,
    /// The account already had this subject.
    Same,
    /// The account has another subject, or this subject belongs to another account.
    Conflict,
}

#[derive(Clone, Debug)]
pub struct SsoLinks {
    db: Db,
}

impl SsoLinks {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// The subject linked to the account, if any.
    pub async fn subject_of(&self, user_id: i64) -> Result<Option<String>, sqlx::Error> {
        const SQL: &str = "SELECT sso_subject FROM users WHERE id = $1";
        let found: Option<Option<String>> =
            on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(user_id).fetch_optional(pool).await?);
        Ok(found.flatten())
    }

    /// Links `subject` to the account unless it has another one; one conditional UPDATE, so two
    /// racing sign-ins with different subjects cannot both win.
    pub async fn link(&self, user_id: i64, subject: &str) -> Result<Link, sqlx::Error> {
        const LINK: &str = "UPDATE users SET sso_subject = $2 WHERE id = $1 AND sso_subject IS NULL";
        const CURRENT: &str = "SELECT sso_subject FROM users WHERE id = $1";
        let linked = on_db!(&self.db, |pool| {
            sqlx::query(LINK).bind(user_id).bind(subject).execute(pool).await.map(|done| done.rows_affected())
        });
        match linked {
            Ok(1) => return Ok(Link::Linked),
            Ok(_) => {}
            Err(error) if is_unique_violation(&error) => return Ok(Link::Conflict),
            Err(error) => return Err(error),
        }
        let current: Option<Option<String>> =
            on_db!(&self.db, |pool| sqlx::query_scalar(CURRENT).bind(user_id).fetch_optional(pool).await?);
        Ok(if current.flatten().as_deref() == Some(subject) { Link::Same } else { Link::Conflict })
    }
}
