//! The deployment's file key, as the database records it: its id (never the key), written by the
//! first instance that stores files encrypted and moved by a finished rotation, so that instances
//! which each made a `file.key` of their own are caught at start-up, before any file exists.

use crate::{
    db::{Db, Dialect, Sql},
    on_db,
};

const RECORD_FIRST: Sql =
    Sql::same("INSERT INTO file_key_record (id, key_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING");
const RECORDED: Sql = Sql::same("SELECT key_id FROM file_key_record WHERE id = 1");
const REPLACE: Sql = Sql::same(
    "INSERT INTO file_key_record (id, key_id) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET key_id = excluded.key_id",
);

/// The recorded id of the deployment's file key.
#[derive(Clone, Debug)]
pub struct FileKeyRecord {
    db: Db,
}

impl FileKeyRecord {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Records `key_id` unless a key is recorded already; answers the recorded id, which is another
    /// one when another instance came first (two starting at once: one wins, by the primary key).
    pub async fn record_first(&self, key_id: &str) -> Result<String, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&RECORD_FIRST)).bind(key_id).execute(pool).await.map(drop))?;
        Ok(self.recorded().await?.unwrap_or_else(|| key_id.to_owned()))
    }

    /// The recorded id, if any instance has stored files encrypted yet.
    pub async fn recorded(&self) -> Result<Option<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&RECORDED)).fetch_optional(pool).await)
    }

    /// Makes `key_id` the deployment's file key: once a rotation has moved every file under it.
    pub async fn replace(&self, key_id: &str) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&REPLACE)).bind(key_id).execute(pool).await.map(drop))?;
        Ok(())
    }
}
