//! `watasu keys rotate`: re-wraps every live data key from the file key to the next one, without
//! touching the stored bytes. Each row moves in its own conditional UPDATE (still wrapped under
//! the key it was read under), in batches, so a run can stop anywhere and the next carries on, and
//! instances serving meanwhile open every file: they hold both keys and pick by the row's
//! `file_key_id`. A key destroyed meanwhile stays destroyed: the UPDATE needs it still there.

use super::{FileKeys, KeyRing, key_record::FileKeyRecord};
use crate::{
    db::{Db, Dialect, Sql},
    on_db,
};

/// The rows that hold a wrapped data key: stored files, and finished uploads not shared yet (a
/// completed resumable upload's key lives on its upload row until a share's file row takes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyedRows {
    Files,
    Uploads,
}

/// One table's queries: live wrapped keys not under the next key ($1) after id $2, $3 at a time;
/// one row re-wrapped only if it still holds the key that was read (not destroyed, not re-wrapped
/// by another run); how many are left.
struct Queries {
    not_yet_rewrapped: Sql,
    rewrap: Sql,
    remaining: Sql,
}

macro_rules! queries {
    ($table:literal) => {
        Queries {
            not_yet_rewrapped: Sql::same(concat!(
                "SELECT id, storage_key, wrapped_key, file_key_id FROM ",
                $table,
                " WHERE wrapped_key IS NOT NULL AND (file_key_id IS NULL OR file_key_id <> $1) AND id > $2
                  ORDER BY id LIMIT $3"
            )),
            rewrap: Sql::same(concat!(
                "UPDATE ",
                $table,
                " SET wrapped_key = $1, file_key_id = $2
                  WHERE id = $3 AND wrapped_key IS NOT NULL AND file_key_id = $4"
            )),
            remaining: Sql::same(concat!(
                "SELECT count(*) FROM ",
                $table,
                " WHERE wrapped_key IS NOT NULL AND (file_key_id IS NULL OR file_key_id <> $1)"
            )),
        }
    };
}

impl KeyedRows {
    const ALL: [KeyedRows; 2] = [KeyedRows::Files, KeyedRows::Uploads];

    fn queries(self) -> &'static Queries {
        const FILES: Queries = queries!("files");
        const UPLOADS: Queries = queries!("uploads");
        match self {
            KeyedRows::Files => &FILES,
            KeyedRows::Uploads => &UPLOADS,
        }
    }
}

#[derive(sqlx::FromRow)]
struct WrappedRow {
    id: i64,
    storage_key: String,
    wrapped_key: Vec<u8>,
    file_key_id: Option<String>,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RotationReport {
    /// Keys now wrapped under the next file key.
    pub rewrapped: u64,
    /// Rows that changed between the read and the update (their key destroyed, or re-wrapped by
    /// another run): left as they are.
    pub changed_meanwhile: u64,
    /// Ids of files whose key opens under neither file key: left under their key (they were
    /// unreadable before and stay so; the start-up check names them by count). Such uploads are
    /// counted among the remaining only.
    pub not_opened: Vec<i64>,
}

/// A rotation from the file key to the next one.
pub struct Rotation {
    db: Db,
    from: FileKeys,
    to: FileKeys,
}

impl Rotation {
    /// `None` when the ring holds no next key (WATASU_FILE_KEY_NEXT unset) or the next key is
    /// the current one.
    pub fn new(db: Db, keys: &KeyRing) -> Option<Self> {
        let to = keys.next()?.clone();
        (to.id() != keys.current().id()).then(|| Self { db, from: keys.current().clone(), to })
    }

    /// The id of the key the rotation moves from (never the key itself).
    pub fn from_id(&self) -> &str {
        self.from.id()
    }

    /// The id of the key the rotation moves to.
    pub fn to_id(&self) -> &str {
        self.to.id()
    }

    /// Re-wraps every live key not under the next key yet, `batch` rows per read; once none is
    /// left, the next key becomes the deployment's recorded file key.
    pub async fn run(&self, batch: u32) -> Result<RotationReport, sqlx::Error> {
        let mut report = RotationReport::default();
        for table in KeyedRows::ALL {
            let mut after = 0;
            while let Some(last) = self.run_batch(table, after, batch, &mut report).await? {
                after = last;
            }
        }
        if self.remaining().await? == 0 {
            FileKeyRecord::new(self.db.clone()).replace(self.to.id()).await?;
        }
        Ok(report)
    }

    /// One batch of up to `batch` rows of `table` after id `after`: the last id it read, or `None` when
    /// none was left. A run stopped after any batch leaves every row under one of the two keys.
    pub async fn run_batch(
        &self,
        table: KeyedRows,
        after: i64,
        batch: u32,
        report: &mut RotationReport,
    ) -> Result<Option<i64>, sqlx::Error> {
        let queries = table.queries();
        let rows: Vec<WrappedRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&queries.not_yet_rewrapped))
                .bind(self.to.id())
                .bind(after)
                .bind(i64::from(batch.max(1)))
                .fetch_all(pool)
                .await
        })?;
        let Some(last) = rows.last().map(|row| row.id) else { return Ok(None) };
        for row in rows {
            let opened = (row.file_key_id.as_deref() == Some(self.from.id()))
                .then(|| self.from.unwrap(&row.storage_key, &row.wrapped_key))
                .flatten();
            let Some(data_key) = opened else {
                tracing::error!(id = row.id, ?table, "a file's key does not open under the file key: left as it is");
                if table == KeyedRows::Files {
                    report.not_opened.push(row.id);
                }
                continue;
            };
            let rewrapped = self.to.wrap(&row.storage_key, &data_key);
            let updated = on_db!(&self.db, |pool| {
                sqlx::query(pool.sql(&queries.rewrap))
                    .bind(&rewrapped.wrapped)
                    .bind(&rewrapped.key_id)
                    .bind(row.id)
                    .bind(self.from.id())
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
            })?;
            match updated {
                0 => report.changed_meanwhile += 1,
                _ => report.rewrapped += 1,
            }
        }
        Ok(Some(last))
    }

    /// Live keys still wrapped under another key than the next one.
    pub async fn remaining(&self) -> Result<i64, sqlx::Error> {
        let mut left = 0;
        for table in KeyedRows::ALL {
            let sql = &table.queries().remaining;
            left += on_db!(&self.db, |pool| sqlx::query_scalar::<_, i64>(pool.sql(sql))
                .bind(self.to.id())
                .fetch_one(pool)
                .await)?;
        }
        Ok(left)
    }
}
