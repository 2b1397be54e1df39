//! Second factors after a password: an authenticator app (TOTP, `totp`), one-time recovery codes
//! (`recovery`), and the sign-ins waiting for one (`pending`). [`SecondFactors::enrolled`] is the
//! one answer to "does this account have a second factor?".

pub mod pending;
pub mod recovery;
mod seal;
pub mod totp;
pub mod tries;

pub use pending::{PendingSignIns, Purpose};
pub use seal::{TotpKey, Unreadable};

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db,
    secret::{SecretKey, SecretString},
    sql,
};

/// What a TOTP code came to.
#[derive(Debug, PartialEq, Eq)]
pub enum TotpCheck {
    Accepted,
    Wrong,
    /// Right, but of a step already used (or earlier): each code works once.
    Replayed,
}

/// What removing an account's factors took away.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// A working app (a set-up still waiting does not count).
    pub totp: bool,
    pub passkeys: u64,
    /// Unused ones.
    pub recovery_codes: u64,
}

/// An app's secret, opened, with the sealed bytes it was read as.
pub struct AppSecret {
    sealed: Vec<u8>,
    secret: Vec<u8>,
}

impl AppSecret {
    /// What the set-up page shows for it.
    pub fn provisioning(&self, account: &str) -> totp::Provisioning {
        totp::provisioning(&self.secret, account)
    }
}

impl std::fmt::Debug for AppSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppSecret([redacted])")
    }
}

#[derive(Clone, Debug)]
pub struct SecondFactors {
    db: Db,
    key: TotpKey,
}

/// A working app or any passkey: either stands as the step after the password.
const ENROLLED: &str = "SELECT (SELECT count(*) FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL)
      + (SELECT count(*) FROM passkeys WHERE user_id = $1)";
/// A new secret replaces an unconfirmed one, never a confirmed one.
const START: Sql = sql!(
    "INSERT INTO totp_factors (user_id, secret_sealed) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET secret_sealed = excluded.secret_sealed, created_at = " now "
      WHERE totp_factors.confirmed_at IS NULL"
);
/// A set-up waits for its first code as long as a pending sign-in does ($3): an abandoned one must
/// not stay readable, or anyone later holding the session could confirm it with their own app,
/// past the password that starting a set-up asks for.
const SECRET: Sql = sql!(
    "SELECT secret_sealed FROM totp_factors WHERE user_id = $1 AND (confirmed_at IS NULL) = $2
        AND (confirmed_at IS NOT NULL OR created_at > " now " - " secs("$3") ")"
);
/// Confirms the very secret that was checked, so a restarted enrolment cannot be confirmed by a
/// code of the one it replaced.
const CONFIRM: Sql = sql!(
    "UPDATE totp_factors SET confirmed_at = " now ", last_step = $3
      WHERE user_id = $1 AND secret_sealed = $2 AND confirmed_at IS NULL"
);
/// One statement decides a replay: only a later step than the last accepted one moves it.
const ACCEPT_STEP: &str = "UPDATE totp_factors SET last_step = $2
      WHERE user_id = $1 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $2)";
const USE_CODE: Sql = sql!(
    "UPDATE recovery_codes SET used_at = " now " WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL"
);
const CODES_LEFT: &str = "SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL";

impl SecondFactors {
    pub fn new(db: Db, secret: &SecretKey) -> Self {
        Self { db, key: TotpKey::derive(secret) }
    }

    /// Whether the account has a working second factor: an app or a passkey.
    pub async fn enrolled(&self, user_id: i64) -> Result<bool, sqlx::Error> {
        let factors: i64 = on_db!(&self.db, |pool| sqlx::query_scalar(ENROLLED).bind(user_id).fetch_one(pool).await?);
        Ok(factors > 0)
    }

    /// Whether the account has a working authenticator app.
    pub async fn has_app(&self, user_id: i64) -> Result<bool, sqlx::Error> {
        const APP_ON: &str = "SELECT count(*) FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL";
        let apps: i64 = on_db!(&self.db, |pool| sqlx::query_scalar(APP_ON).bind(user_id).fetch_one(pool).await?);
        Ok(apps > 0)
    }

    /// Starts (or restarts) setting up an app with a fresh secret; false when TOTP is already on.
    pub async fn start_totp(&self, user_id: i64) -> Result<bool, sqlx::Error> {
        let sealed = self.key.seal(user_id, &totp::new_secret());
        let started = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&START)).bind(user_id).bind(sealed).execute(pool).await?.rows_affected()
        });
        Ok(started == 1)
    }

    /// The secret of a set-up that waits for its first code (`waiting`, started within
    /// [`pending::ENROL_TTL`]), or of the working app.
    pub async fn app_secret(&self, user_id: i64, waiting: bool) -> anyhow::Result<Option<AppSecret>> {
        let sealed: Option<Vec<u8>> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&SECRET))
                .bind(user_id)
                .bind(waiting)
                .bind(seconds(pending::ENROL_TTL))
                .fetch_optional(pool)
                .await?
        });
        let Some(sealed) = sealed else { return Ok(None) };
        let secret = self.key.open(user_id, &sealed)?;
        Ok(Some(AppSecret { sealed, secret }))
    }

    /// Confirms a waiting set-up with its first correct code; that code's step counts as used.
    pub async fn confirm_totp(&self, user_id: i64, app: &AppSecret, code: &SecretString) -> Result<bool, sqlx::Error> {
        let Some(step) = totp::matching_step(&app.secret, code, totp::unix_now()) else { return Ok(false) };
        let confirmed = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&CONFIRM))
                .bind(user_id)
                .bind(&app.sealed)
                .bind(step)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(confirmed == 1)
    }

    /// Checks a code of the working app, using its step up.
    pub async fn check_totp(
        &self,
        user_id: i64,
        app: &AppSecret,
        code: &SecretString,
    ) -> Result<TotpCheck, sqlx::Error> {
        let Some(step) = totp::matching_step(&app.secret, code, totp::unix_now()) else { return Ok(TotpCheck::Wrong) };
        let accepted = on_db!(&self.db, |pool| {
            sqlx::query(ACCEPT_STEP).bind(user_id).bind(step).execute(pool).await?.rows_affected()
        });
        Ok(if accepted == 1 { TotpCheck::Accepted } else { TotpCheck::Replayed })
    }

    /// Uses one recovery code (each works once); false for a wrong or used one.
    pub async fn use_recovery_code(&self, user_id: i64, code: &SecretString) -> Result<bool, sqlx::Error> {
        let Some(hash) = recovery::stored_hash(code) else { return Ok(false) };
        let used = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&USE_CODE)).bind(user_id).bind(hash).execute(pool).await?.rows_affected()
        });
        Ok(used == 1)
    }

    /// How many recovery codes the account has left.
    pub async fn recovery_codes_left(&self, user_id: i64) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(CODES_LEFT).bind(user_id).fetch_one(pool).await)
    }

    /// Replaces the account's recovery codes with a new set, returned once to be shown.
    pub async fn new_recovery_codes(&self, user_id: i64) -> Result<Vec<SecretString>, sqlx::Error> {
        const CLEAR: &str = "DELETE FROM recovery_codes WHERE user_id = $1";
        const ADD: &str = "INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2)";
        let codes: Vec<SecretString> = (0..recovery::SET_SIZE).map(|_| recovery::new_code()).collect();
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            sqlx::query(CLEAR).bind(user_id).execute(&mut *tx).await?;
            for code in &codes {
                let hash = recovery::stored_hash(code).expect("a new code is well formed");
                sqlx::query(ADD).bind(user_id).bind(hash).execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(codes)
    }

    /// Removes the account's app (working or waiting). The recovery codes go too once no passkey
    /// is left for them to stand in for.
    pub async fn remove_app(&self, user_id: i64) -> Result<(), sqlx::Error> {
        const APP: &str = "DELETE FROM totp_factors WHERE user_id = $1";
        on_db!(&self.db, |pool| sqlx::query(APP).bind(user_id).execute(pool).await.map(drop)?);
        self.drop_orphaned_codes(user_id).await?;
        Ok(())
    }

    /// Drops the recovery codes of an account that has no factor left for them to replace.
    pub async fn drop_orphaned_codes(&self, user_id: i64) -> Result<u64, sqlx::Error> {
        const ORPHANED: &str = "DELETE FROM recovery_codes WHERE user_id = $1
              AND NOT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL)
              AND NOT EXISTS (SELECT 1 FROM passkeys WHERE user_id = $1)";
        on_db!(&self.db, |pool| Ok(sqlx::query(ORPHANED).bind(user_id).execute(pool).await?.rows_affected()))
    }

    /// Removes every factor of the account (its app, set up or waiting, its passkeys and its
    /// recovery codes); answers what went.
    pub async fn remove_all(&self, user_id: i64) -> Result<Removed, sqlx::Error> {
        const TOTP: &str = "DELETE FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL";
        const WAITING: &str = "DELETE FROM totp_factors WHERE user_id = $1";
        const UNUSED: &str = "DELETE FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL";
        const USED: &str = "DELETE FROM recovery_codes WHERE user_id = $1";
        const PASSKEYS: &str = "DELETE FROM passkeys WHERE user_id = $1";
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let totp = sqlx::query(TOTP).bind(user_id).execute(&mut *tx).await?.rows_affected() == 1;
            sqlx::query(WAITING).bind(user_id).execute(&mut *tx).await?;
            let recovery_codes = sqlx::query(UNUSED).bind(user_id).execute(&mut *tx).await?.rows_affected();
            sqlx::query(USED).bind(user_id).execute(&mut *tx).await?;
            let passkeys = sqlx::query(PASSKEYS).bind(user_id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(Removed { totp, passkeys, recovery_codes })
        })
    }
}
