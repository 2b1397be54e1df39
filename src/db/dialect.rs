//! The dialect toolkit: each statement is written once, and the few spellings SQLite and
//! PostgreSQL do not share (the database clock, intervals, how a write transaction begins) are
//! expanded at compile time into one `&'static str` per backend.
//!
//! ```ignore
//! const RENEW: Sql = sql!("UPDATE shares SET expires_at = " now " + " secs("$2") " WHERE id = $1");
//! on_db!(&self.db, |pool| sqlx::query(pool.sql(&RENEW)).bind(id).bind(ttl).execute(pool).await)?;
//! ```

use std::future::Future;

use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

/// One statement in both dialects, made by [`sql!`](crate::sql) (or written out by hand where the
/// statements genuinely differ, with a comment naming the difference).
#[derive(Clone, Copy, Debug)]
pub struct Sql {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

impl Sql {
    /// A statement both dialects spell the same way.
    pub const fn same(text: &'static str) -> Self {
        Self { sqlite: text, postgres: text }
    }
}

/// Writes a statement once. Pieces, in order, are string literals (shared text) and:
/// - `now`: the database clock, `unixepoch('subsec')` (REAL seconds) or `now()` (timestamptz);
/// - `secs("$n")`: an interval of that many seconds, to add to or subtract from a time;
/// - `{ sqlite: "…", postgres: "…" }`: a fragment each dialect spells its own way.
#[macro_export]
macro_rules! sql {
    ($($piece:tt)+) => { $crate::__sql_pieces!([] [] $($piece)+) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sql_pieces {
    ([$($s:tt)*] [$($p:tt)*]) => {
        $crate::db::Sql { sqlite: concat!($($s),*), postgres: concat!($($p),*) }
    };
    ([$($s:tt)*] [$($p:tt)*] now $($rest:tt)*) => {
        $crate::__sql_pieces!([$($s)* "unixepoch('subsec')"] [$($p)* "now()"] $($rest)*)
    };
    ([$($s:tt)*] [$($p:tt)*] secs($e:literal) $($rest:tt)*) => {
        $crate::__sql_pieces!([$($s)* "(" $e ")"] [$($p)* "make_interval(secs => " $e ")"] $($rest)*)
    };
    ([$($s:tt)*] [$($p:tt)*] { sqlite: $a:literal, postgres: $b:literal $(,)? } $($rest:tt)*) => {
        $crate::__sql_pieces!([$($s)* $a] [$($p)* $b] $($rest)*)
    };
    ([$($s:tt)*] [$($p:tt)*] $text:literal $($rest:tt)*) => {
        $crate::__sql_pieces!([$($s)* $text] [$($p)* $text] $($rest)*)
    };
}

/// Runs `body` on whichever pool is live: the body is written once and type-checked against each
/// backend, so binds and decoding are checked for both.
#[macro_export]
macro_rules! on_db {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($pool) => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

/// What a backend's pool knows of its dialect.
pub trait Dialect {
    type Database: sqlx::Database;

    /// This backend's spelling of the statement.
    fn sql(&self, statement: &Sql) -> &'static str;

    /// Begins a transaction that will write. SQLite takes the write lock up front (`BEGIN
    /// IMMEDIATE`): a deferred transaction that reads and then writes fails with
    /// SQLITE_BUSY_SNAPSHOT under concurrent writers, which busy_timeout does not retry.
    /// PostgreSQL's plain `BEGIN` already lets writers wait on row locks.
    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Self::Database>, sqlx::Error>> + Send;
}

impl Dialect for SqlitePool {
    type Database = Sqlite;

    fn sql(&self, statement: &Sql) -> &'static str {
        statement.sqlite
    }

    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Sqlite>, sqlx::Error>> + Send {
        self.begin_with("BEGIN IMMEDIATE")
    }
}

impl Dialect for PgPool {
    type Database = Postgres;

    fn sql(&self, statement: &Sql) -> &'static str {
        statement.postgres
    }

    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Postgres>, sqlx::Error>> + Send {
        self.begin()
    }
}

#[cfg(test)]
mod tests {
    use super::Sql;

    #[test]
    fn the_clock_and_intervals_expand_to_each_dialect() {
        const RENEW: Sql = sql!("UPDATE s SET at = " now " + " secs("$2") " WHERE id = $1");
        assert_eq!(RENEW.sqlite, "UPDATE s SET at = unixepoch('subsec') + ($2) WHERE id = $1");
        assert_eq!(RENEW.postgres, "UPDATE s SET at = now() + make_interval(secs => $2) WHERE id = $1");
    }

    #[test]
    fn a_fragment_spelled_per_dialect_lands_only_in_its_own_statement() {
        const LOCK: Sql = sql!("SELECT id FROM users" { sqlite: "", postgres: " FOR UPDATE" });
        assert_eq!(LOCK.sqlite, "SELECT id FROM users");
        assert_eq!(LOCK.postgres, "SELECT id FROM users FOR UPDATE");
        assert_eq!(Sql::same("SELECT 1").postgres, "SELECT 1");
    }
}
