//! The database: one enum over SQLite (embedded default) and PostgreSQL (production, scale-out),
//! connection set-up, embedded migrations, and the timestamp type both dialects decode into.
//!
//! Time is always the database's clock: `unixepoch('subsec')` (REAL seconds) on SQLite and
//! `now()` (timestamptz) on PostgreSQL, so several app instances agree on what has expired.

mod code;
mod dialect;
mod full;
mod migrations;

pub use code::UnknownCode;
pub use dialect::{Dialect, Sql};
pub use full::{is_disk_full, one_written_row, write_probe, written_row};

use std::{str::FromStr, time::Duration};

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::{
    Decode, PgPool, Postgres, Sqlite, SqlitePool, Type,
    error::BoxDynError,
    postgres::{PgConnectOptions, PgPoolOptions},
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

/// A connection pool for one of the two backends; repositories `match` on it.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Db {
    /// Connects to `url`; `timeout` bounds how long a request waits for a connection, so a database
    /// outage turns into quick 503 answers instead of hanging requests.
    pub async fn connect(url: &str, timeout: Duration) -> anyhow::Result<Self> {
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .context("reading the SQLite URL")?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                // Deleted rows are overwritten with zeros, not left in freed pages: a copy of the
                // file holds nothing of a destroyed note, key or address.
                .pragma("secure_delete", "ON")
                // Writers queue on SQLite's lock instead of failing with SQLITE_BUSY.
                .busy_timeout(Duration::from_secs(30));
            if let Some(dir) = options.get_filename().parent()
                && !dir.as_os_str().is_empty()
            {
                crate::private_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .acquire_timeout(timeout.max(Duration::from_secs(30)))
                .connect_with(options)
                .await
                .context("opening the SQLite database")?;
            Ok(Self::Sqlite(pool))
        } else {
            let options = PgConnectOptions::from_str(url).context("reading the PostgreSQL URL")?;
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(timeout)
                .test_before_acquire(true)
                .connect_with(options)
                .await
                .context("connecting to PostgreSQL")?;
            Ok(Self::Postgres(pool))
        }
    }

    /// Applies the embedded migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        migrations::run(self).await
    }

    /// Answers whether the database takes queries right now (for /readyz).
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        match self {
            Self::Sqlite(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
            Self::Postgres(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
        }
    }

    pub fn backend_name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(pool) => pool.close().await,
            Self::Postgres(pool) => pool.close().await,
        }
    }
}

/// What a database URL's TLS setting protects against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsCheck {
    /// SQLite, a Unix socket, or a loopback address: nothing crosses a network.
    Local,
    /// A remote PostgreSQL whose certificate is checked (`verify-ca`, `verify-full`).
    Verified,
    /// A remote PostgreSQL reached in clear or with TLS that accepts any certificate (sqlx, like
    /// libpq, only encrypts for `prefer` and `require`: anyone on the path can pose as the server
    /// and read the password and every row).
    Unverified { host: String, mode: &'static str },
}

/// Classifies a database URL by where it connects and how its TLS is checked. The URL is read as
/// sqlx reads it, so `PGHOST`, `PGSSLMODE` and `host=` socket folders count too.
pub fn check_postgres_tls(url: &str) -> TlsCheck {
    use sqlx::postgres::PgSslMode;
    if url.starts_with("sqlite:") {
        return TlsCheck::Local;
    }
    // A URL sqlx cannot read fails at connect time with its own message.
    let Ok(options) = PgConnectOptions::from_str(url) else { return TlsCheck::Local };
    let host = options.get_host();
    let local = options.get_socket().is_some() || host.starts_with('/') || crate::is_loopback_host(host);
    let mode = match options.get_ssl_mode() {
        PgSslMode::VerifyCa | PgSslMode::VerifyFull => return if local { TlsCheck::Local } else { TlsCheck::Verified },
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
    };
    if local { TlsCheck::Local } else { TlsCheck::Unverified { host: host.to_owned(), mode } }
}

/// True when the error says a UNIQUE constraint refused the row (SQLite reports no constraint names).
pub fn is_unique_violation(error: &sqlx::Error) -> bool {
    error.as_database_error().is_some_and(|e| e.is_unique_violation())
}

/// True when the error means "the database cannot be reached now" rather than "the query is wrong".
pub fn is_unavailable(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_))
        || error
            .as_database_error()
            .and_then(|e| e.code())
            // PostgreSQL: admin shutdown, crash shutdown, cannot connect now.
            .is_some_and(|code| matches!(code.as_ref(), "57P01" | "57P02" | "57P03"))
}

/// A point in time read from either backend: REAL Unix seconds on SQLite, timestamptz on PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub DateTime<Utc>);

impl Type<Sqlite> for Timestamp {
    fn type_info() -> sqlx::sqlite::SqliteTypeInfo {
        <f64 as Type<Sqlite>>::type_info()
    }
    fn compatible(ty: &sqlx::sqlite::SqliteTypeInfo) -> bool {
        <f64 as Type<Sqlite>>::compatible(ty) || <i64 as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for Timestamp {
    fn decode(value: sqlx::sqlite::SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let seconds = <f64 as Decode<Sqlite>>::decode(value)?;
        let micros = (seconds * 1_000_000.0).round() as i64;
        DateTime::from_timestamp_micros(micros)
            .map(Self)
            .ok_or_else(|| format!("timestamp {seconds} out of range").into())
    }
}

impl Type<Postgres> for Timestamp {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <DateTime<Utc> as Type<Postgres>>::type_info()
    }
}

impl<'r> Decode<'r, Postgres> for Timestamp {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, BoxDynError> {
        <DateTime<Utc> as Decode<Postgres>>::decode(value).map(Self)
    }
}

/// Seconds as the float both dialects take for interval arithmetic
/// (`unixepoch('subsec') + $1` on SQLite, `now() + make_interval(secs => $1)` on PostgreSQL).
pub fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::{TlsCheck, check_postgres_tls};

    fn unverified(mode: &'static str) -> TlsCheck {
        TlsCheck::Unverified { host: "db.example.com".to_owned(), mode }
    }

    #[test]
    fn a_remote_postgresql_counts_as_verified_only_with_verify_full_or_verify_ca() {
        assert_eq!(check_postgres_tls("postgres://u:p@db.example.com/x?sslmode=require"), unverified("require"));
        assert_eq!(check_postgres_tls("postgres://u:p@db.example.com/x?sslmode=prefer"), unverified("prefer"));
        assert_eq!(check_postgres_tls("postgres://u:p@db.example.com/x?sslmode=disable"), unverified("disable"));
        assert_eq!(check_postgres_tls("postgresql://u:p@db.example.com/x?sslmode=verify-full"), TlsCheck::Verified);
        assert_eq!(check_postgres_tls("postgres://u:p@db.example.com/x?sslmode=verify-ca"), TlsCheck::Verified);
        assert!(matches!(check_postgres_tls("postgres://u@10.0.0.5:5432/x"), TlsCheck::Unverified { .. }));
        assert!(matches!(
            check_postgres_tls("postgres://u@localhost/x?host=db.example.com&sslmode=require"),
            TlsCheck::Unverified { .. }
        ));
    }

    #[test]
    fn sqlite_loopback_and_unix_sockets_need_no_verified_tls() {
        for url in [
            "sqlite://data/watasu.db?mode=rwc",
            "postgres://u:p@localhost/x",
            "postgres://u:p@127.0.0.1:5432/x?sslmode=disable",
            "postgres://u:p@[::1]:5432/x",
            "postgres://postgres@localhost/x?host=/run/postgresql&port=5432",
            "postgres://postgres@db.example.com/x?host=/tmp/pg",
            "postgres://postgres@%2Frun%2Fpostgresql/x",
        ] {
            assert_eq!(check_postgres_tls(url), TlsCheck::Local, "{url}");
        }
    }
}
