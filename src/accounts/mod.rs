//! Sender accounts: creating and finding users. Passwords live in `password`.

pub mod invitations;
pub mod login;
mod name;
pub mod passkeys;
pub mod password;
pub mod policy;
pub mod second_factor;
pub mod setup;
pub mod throttle;
mod time_zone;
pub mod tokens;

pub use name::{DisplayName, InvalidName};
pub use time_zone::TimeZone;

use crate::{
    db::{Db, Dialect, Sql, is_unique_violation},
    i18n::Lang,
    on_db, sql,
};

crate::db_code! {
    /// What a sender can do: admins also manage the team.
    pub enum Role { Admin = "admin", Sender = "sender" }
}

/// A normalised, syntactically valid mail address (lettre's parser), lower-cased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailAddress(String);

impl EmailAddress {
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.len() > 254 {
            return Err("the address is too long".to_owned());
        }
        let address: lettre::Address =
            trimmed.parse().map_err(|_| format!("'{trimmed}' is not a valid email address"))?;
        Ok(Self(address.to_string().to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Valid, but likely a slip: a domain without a dot (`tanaka@example`) or ending in one.
    /// Such an address is asked about before it is used, never refused.
    pub fn looks_mistyped(&self) -> bool {
        let domain = self.0.rsplit_once('@').map_or("", |(_, domain)| domain);
        !domain.starts_with('[') && (!domain.contains('.') || domain.ends_with('.'))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CreateUserError {
    #[error("an account with this email address already exists")]
    DuplicateEmail,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A sender as other parts of the app need them.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub lang: crate::i18n::Lang,
    pub disabled: bool,
}

impl User {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}

/// The users table.
#[derive(Clone, Debug)]
pub struct Users {
    db: Db,
}

/// A new account; also the account an accepted invitation creates.
const INSERT_USER: &str =
    "INSERT INTO users (email, display_name, password_hash, role, lang) VALUES ($1, $2, $3, $4, $5) RETURNING id";
/// PostgreSQL locks every active admin's row first, in one order (no deadlock): two admins
/// disabling each other at once would otherwise each see the other still active (write skew) and
/// leave the team with none. The second waits here and then sees the first one's commit. SQLite's
/// write transaction already serialises the two, so there it is a plain read.
pub const LOCK_ACTIVE_ADMINS: Sql = sql!(
    "SELECT id FROM users WHERE role = 'admin' AND disabled_at IS NULL ORDER BY id" { sqlite: "", postgres: " FOR UPDATE" }
);
/// Only an admin still active disables anyone (never themselves), so one always stays.
const DISABLE: Sql = sql!(
    "UPDATE users SET disabled_at = " now " WHERE id = $1 AND id <> $2 AND disabled_at IS NULL
        AND EXISTS (SELECT 1 FROM users a WHERE a.id = $2 AND a.role = 'admin' AND a.disabled_at IS NULL)"
);

/// The deletion cases that keep an account from being enabled again: every one not completed (the
/// account is on its way out). Written once for the enable statement and for the team page.
macro_rules! unfinished_deletion_cases {
    () => {
        "FROM deletion_cases d WHERE d.state <> 'completed'"
    };
}

/// An admin still active enables a disabled account again (never their own, never one a deletion
/// case has started on).
const ENABLE: Sql = Sql::same(concat!(
    "UPDATE users SET disabled_at = NULL WHERE id = $1 AND id <> $2 AND disabled_at IS NOT NULL
        AND EXISTS (SELECT 1 FROM users a WHERE a.id = $2 AND a.role = 'admin' AND a.disabled_at IS NULL)
        AND NOT EXISTS (SELECT 1 ",
    unfinished_deletion_cases!(),
    " AND d.subject_id = $1)"
));

/// Every account, and which of them can be enabled again.
pub struct Team {
    /// Admins first, then by name.
    pub members: Vec<User>,
    /// The accounts a deletion case has started on.
    being_deleted: Vec<i64>,
}

impl Team {
    /// A disabled account that no deletion case has started on: what `Users::enable` accepts.
    pub fn can_enable(&self, member: &User) -> bool {
        member.disabled && !self.being_deleted.contains(&member.id)
    }
}

impl Users {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Finds an account by its (normalised) address.
    pub async fn find_by_email(&self, email: &EmailAddress) -> Result<Option<User>, sqlx::Error> {
        const SQL: &str = "SELECT id, email, display_name, role, lang, disabled_at IS NOT NULL AS disabled
                             FROM users WHERE email = $1";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(email.as_str()).fetch_optional(pool).await)
    }

    /// How many accounts exist (none: the first-run setup page is open).
    pub async fn count(&self) -> Result<i64, sqlx::Error> {
        const SQL: &str = "SELECT count(*) FROM users";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).fetch_one(pool).await)
    }

    /// An account and its password hash, for signing in.
    pub async fn credentials(&self, email: &EmailAddress) -> Result<Option<(User, String)>, sqlx::Error> {
        let Some(user) = self.find_by_email(email).await? else { return Ok(None) };
        const SQL: &str = "SELECT password_hash FROM users WHERE id = $1";
        let hash: String = on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(user.id).fetch_one(pool).await?);
        Ok(Some((user, hash)))
    }

    /// An active account's password hash, to ask for the current password again.
    pub async fn password_hash(&self, id: i64) -> Result<Option<String>, sqlx::Error> {
        const SQL: &str = "SELECT password_hash FROM users WHERE id = $1 AND disabled_at IS NULL";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(id).fetch_optional(pool).await)
    }

    /// The account with this id, unless it was disabled.
    pub async fn find_active(&self, id: i64) -> Result<Option<User>, sqlx::Error> {
        const SQL: &str = "SELECT id, email, display_name, role, lang, disabled_at IS NOT NULL AS disabled
                             FROM users WHERE id = $1 AND disabled_at IS NULL";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(id).fetch_optional(pool).await)
    }

    /// Replaces an account's password hash.
    pub async fn set_password_hash(&self, id: i64, hash: &str) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE users SET password_hash = $2 WHERE id = $1";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(id).bind(hash).execute(pool).await.map(drop))
    }

    /// Every account, admins first, then by name, and which of them can be enabled again.
    pub async fn list(&self) -> Result<Team, sqlx::Error> {
        const SQL: &str = "SELECT id, email, display_name, role, lang, disabled_at IS NOT NULL AS disabled
                             FROM users ORDER BY role, display_name, id";
        const BEING_DELETED: &str = concat!("SELECT DISTINCT d.subject_id ", unfinished_deletion_cases!());
        let members = on_db!(&self.db, |pool| sqlx::query_as(SQL).fetch_all(pool).await)?;
        let being_deleted = on_db!(&self.db, |pool| sqlx::query_scalar(BEING_DELETED).fetch_all(pool).await)?;
        Ok(Team { members, being_deleted })
    }

    /// Disables an account (not one's own) for the active admin `by`, and revokes its API tokens;
    /// true when it was active. Its sessions are ended by the caller at once.
    pub async fn disable(&self, id: i64, by: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            sqlx::query(pool.sql(&LOCK_ACTIVE_ADMINS)).execute(&mut *tx).await?;
            let done = sqlx::query(pool.sql(&DISABLE)).bind(id).bind(by).execute(&mut *tx).await?.rows_affected();
            // Its API tokens stop with it, in the same commit: no request slips in between.
            if done == 1 {
                sqlx::query(pool.sql(&tokens::REVOKE_ALL_OF_USER)).bind(id).bind(by).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            done
        });
        Ok(done == 1)
    }

    /// Enables a disabled account again for the active admin `by`; true when it was disabled.
    pub async fn enable(&self, id: i64, by: i64) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| sqlx::query(pool.sql(&ENABLE))
            .bind(id)
            .bind(by)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(done == 1)
    }

    /// Sets the language of the mails about the account.
    pub async fn set_lang(&self, id: i64, lang: Lang) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE users SET lang = $2 WHERE id = $1";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(id).bind(lang).execute(pool).await.map(drop))
    }

    /// The recipient mail language the sender chose last (`None`: never chose one).
    pub async fn share_mail_lang(&self, id: i64) -> Result<Option<Lang>, sqlx::Error> {
        const SQL: &str = "SELECT share_mail_lang FROM users WHERE id = $1";
        let code: Option<Option<String>> =
            on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(id).fetch_optional(pool).await?);
        Ok(code.flatten().as_deref().and_then(Lang::from_code))
    }

    /// Remembers the recipient mail language the sender just chose.
    pub async fn set_share_mail_lang(&self, id: i64, lang: Lang) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE users SET share_mail_lang = $2 WHERE id = $1";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(id).bind(lang).execute(pool).await.map(drop))
    }

    /// Creates an account, its mails in `lang`; a second account for the same address is refused.
    pub async fn create(
        &self,
        email: &EmailAddress,
        display_name: &str,
        password_hash: &str,
        role: Role,
        lang: Lang,
    ) -> Result<i64, CreateUserError> {
        let result = on_db!(&self.db, |pool| {
            sqlx::query_scalar(INSERT_USER)
                .bind(email.as_str())
                .bind(display_name)
                .bind(password_hash)
                .bind(role)
                .bind(lang)
                .fetch_all(pool)
                .await
                .and_then(crate::db::one_written_row)
        });
        result.map_err(|e| if is_unique_violation(&e) { CreateUserError::DuplicateEmail } else { e.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::EmailAddress;

    #[test]
    fn addresses_are_trimmed_and_lower_cased() {
        assert_eq!(EmailAddress::parse("  Alice@Example.COM ").unwrap().as_str(), "alice@example.com");
    }

    #[test]
    fn invalid_addresses_are_refused() {
        for bad in ["", "alice", "alice@", "@example.com", "a b@example.com", "alice@example.com\r\nBcc: x@y.z"] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_domain_without_a_dot_or_ending_in_one_looks_mistyped() {
        for slip in ["tanaka@example", "tanaka@localhost"] {
            assert!(EmailAddress::parse(slip).unwrap().looks_mistyped(), "{slip:?} was not asked about");
        }
        if let Ok(trailing) = EmailAddress::parse("tanaka@example.com.") {
            assert!(trailing.looks_mistyped());
        }
        for fine in ["tanaka@example.com", "tanaka@mail.example.co.jp", "tanaka@[192.0.2.1]"] {
            if let Ok(address) = EmailAddress::parse(fine) {
                assert!(!address.looks_mistyped(), "{fine:?} was asked about");
            }
        }
    }
}
