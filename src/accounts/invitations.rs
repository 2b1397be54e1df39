//! Invitations: an admin invites a sender by email; the one-time link (valid 72 hours) lets them
//! choose a password. Using it is one conditional UPDATE in the same transaction as the account
//! insert, so a link works once even when two tabs race.

use std::time::Duration;

use super::{EmailAddress, INSERT_USER, Role};
use crate::{
    db::{Db, Dialect, Sql, Timestamp, is_unique_violation, seconds},
    i18n::Lang,
    on_db,
    secret::{SecretString, random_token, sha256_hex},
    sql,
};

/// How long an invitation link works.
pub const INVITATION_TTL: Duration = Duration::from_secs(72 * 3600);

/// An open invitation found by its link.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Invitation {
    pub id: i64,
    pub email: String,
    pub role: Role,
    /// The language the inviter chose for it.
    pub lang: Lang,
}

/// An invitation still waiting for its link to be used, as the team page lists it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PendingInvitation {
    pub id: i64,
    pub email: String,
    pub expires_at: Timestamp,
}

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("the invitation is used, expired or unknown")]
    NotOpen,
    #[error("an account with this email address already exists")]
    DuplicateEmail,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

#[derive(Clone, Debug)]
pub struct Invitations {
    db: Db,
}

const INSERT: Sql = sql!(
    "INSERT INTO invitations (token_hash, email, role, invited_by, expires_at, lang)
     VALUES ($1, $2, $3, $4, " now " + " secs("$5") ", $6)
     RETURNING id"
);
const FIND_OPEN: Sql = sql!(
    "SELECT id, email, role, lang FROM invitations
      WHERE token_hash = $1 AND used_at IS NULL AND expires_at > " now
);
/// The newest open invitation for an address (single sign-on accepts it in place of the link).
const FIND_OPEN_FOR: Sql = sql!(
    "SELECT id, email, role, lang FROM invitations
      WHERE email = $1 AND used_at IS NULL AND expires_at > " now "
      ORDER BY id DESC LIMIT 1"
);
const PENDING: Sql = sql!(
    "SELECT id, email, expires_at FROM invitations
      WHERE used_at IS NULL AND expires_at > " now "
      ORDER BY expires_at, id"
);
/// A new link for an unused invitation: the old link stops working and the validity starts again.
const RENEW: Sql = sql!(
    "UPDATE invitations SET token_hash = $2, expires_at = " now " + " secs("$3") "
      WHERE id = $1 AND used_at IS NULL
      RETURNING email, lang"
);
const CANCEL: Sql = sql!("DELETE FROM invitations WHERE id = $1 AND used_at IS NULL");
const USE: Sql = sql!(
    "UPDATE invitations SET used_at = " now "
      WHERE id = $1 AND used_at IS NULL AND expires_at > " now
);

impl Invitations {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Creates an invitation and returns its id and the token for its link.
    pub async fn create(
        &self,
        email: &EmailAddress,
        role: Role,
        invited_by: i64,
        lang: Lang,
    ) -> Result<(i64, SecretString), sqlx::Error> {
        let token = random_token();
        let hash = sha256_hex(token.expose());
        let ttl = seconds(INVITATION_TTL);
        let id = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&INSERT))
                .bind(&hash)
                .bind(email.as_str())
                .bind(role)
                .bind(invited_by)
                .bind(ttl)
                .bind(lang)
                .fetch_one(pool)
                .await?
        });
        Ok((id, token))
    }

    /// Every invitation whose link still works, the soonest to expire first.
    pub async fn pending(&self) -> Result<Vec<PendingInvitation>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&PENDING)).fetch_all(pool).await)
    }

    /// Gives an unused invitation a new link, valid from now; its address, its language and the
    /// link's token, or `None` when it was used or cancelled meanwhile.
    pub async fn renew(&self, id: i64) -> Result<Option<(String, Lang, SecretString)>, sqlx::Error> {
        let token = random_token();
        let hash = sha256_hex(token.expose());
        let ttl = seconds(INVITATION_TTL);
        let renewed: Option<(String, Lang)> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&RENEW)).bind(id).bind(hash).bind(ttl).fetch_optional(pool).await?
        });
        Ok(renewed.map(|(email, lang)| (email, lang, token)))
    }

    /// Cancels an unused invitation: its link stops working. True when there was one to cancel.
    pub async fn cancel(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done =
            on_db!(&self.db, |pool| sqlx::query(pool.sql(&CANCEL)).bind(id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    /// The unused, unexpired invitation a link names.
    pub async fn find_open(&self, token: &str) -> Result<Option<Invitation>, sqlx::Error> {
        if !crate::session::is_token_shaped(token) {
            return Ok(None);
        }
        let hash = sha256_hex(token);
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND_OPEN)).bind(hash).fetch_optional(pool).await)
    }

    /// The open invitation for an address, whatever its link.
    pub async fn find_open_for(&self, email: &EmailAddress) -> Result<Option<Invitation>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FIND_OPEN_FOR)).bind(email.as_str()).fetch_optional(pool).await
        })
    }

    /// Uses the invitation and creates the account in one transaction; returns the new user id.
    pub async fn accept(
        &self,
        invitation: &Invitation,
        name: &str,
        password_hash: &str,
        lang: Lang,
    ) -> Result<i64, AcceptError> {
        let created = on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let used = sqlx::query(pool.sql(&USE)).bind(invitation.id).execute(&mut *tx).await?.rows_affected();
            if used != 1 {
                return Err(AcceptError::NotOpen);
            }
            let id = sqlx::query_scalar(INSERT_USER)
                .bind(&invitation.email)
                .bind(name)
                .bind(password_hash)
                .bind(invitation.role)
                .bind(lang)
                .fetch_one(&mut *tx)
                .await;
            match id {
                Ok(id) => tx.commit().await.map(|_| id),
                Err(error) => Err(error),
            }
        });
        created.map_err(|e| if is_unique_violation(&e) { AcceptError::DuplicateEmail } else { e.into() })
    }
}
