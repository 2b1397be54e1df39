//! `watasu storage encrypt`: encrypts the files stored plaintext (before encryption, or while it
//! was off) in place, while the server keeps serving them. Each file is sealed into a copy under a
//! new storage key, the copy read back decrypted and checked against the recorded SHA-256, then the
//! row switched to it in one conditional UPDATE (only if the file is still live and unchanged),
//! then the plaintext deleted. `file_sealings` records each file from before its copy is written
//! until its plaintext is gone, so a run stopped anywhere is finished by the next: a copy never
//! switched to is deleted, a plaintext switched away from is deleted. (A copy written but not yet
//! recorded belongs to no row, and the leftover sweep removes it.)

use std::sync::Arc;

use super::{KeyRing, SealedStore};
use crate::{
    db::{Db, Dialect, Sql},
    metrics::Metrics,
    on_db,
    storage::{StoreError, StoredFile, SweptStore},
};

/// Live plaintext files after id $1, in id order, $2 at a time.
const PLAINTEXT_FILES: Sql = Sql::same(
    "SELECT id, storage_key, size_bytes, sha256, original_name FROM files
      WHERE sealing = 'plaintext' AND purged_at IS NULL AND id > $1
      ORDER BY id LIMIT $2",
);
/// A file about to be encrypted; nothing when another run has it.
const BEGIN: Sql =
    Sql::same("INSERT INTO file_sealings (file_id, plain_key) VALUES ($1, $2) ON CONFLICT (file_id) DO NOTHING");
const RECORD_COPY: Sql = Sql::same("UPDATE file_sealings SET sealed_key = $1 WHERE file_id = $2");
/// The file switched to its sealed copy, only while it is live and still the plaintext that was
/// copied: a file deleted (or changed) meanwhile keeps its row as it is.
const SWITCH: Sql = Sql::same(
    "UPDATE files SET storage_key = $1, sealing = 'sealed-v1', wrapped_key = $2, file_key_id = $3
      WHERE id = $4 AND storage_key = $5 AND sealing = 'plaintext' AND purged_at IS NULL",
);
const DONE: Sql = Sql::same("DELETE FROM file_sealings WHERE file_id = $1");
/// What runs stopped before finishing, with the key each file's row names now.
const INTERRUPTED: Sql = Sql::same(
    "SELECT j.file_id, j.plain_key, j.sealed_key, f.storage_key AS current_key
       FROM file_sealings j LEFT JOIN files f ON f.id = j.file_id ORDER BY j.file_id",
);

/// A live file stored plaintext.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PlainFile {
    pub id: i64,
    pub storage_key: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub original_name: String,
}

#[derive(sqlx::FromRow)]
struct Interrupted {
    file_id: i64,
    plain_key: String,
    sealed_key: Option<String>,
    current_key: Option<String>,
}

/// A file that stays plaintext, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    pub file_id: i64,
    pub name: String,
    pub reason: &'static str,
}

/// What one run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncryptReport {
    /// Sealed, checked, switched to, their plaintext deleted.
    pub encrypted: u64,
    /// Deleted or changed while being copied: the copy was deleted, the row left as it was.
    pub deleted_meanwhile: u64,
    /// Left by a run that stopped: copies never switched to and plaintexts switched away from,
    /// deleted now.
    pub cleaned_up: u64,
    /// Still plaintext: their stored bytes do not match the recorded digest, or are missing.
    pub failed: Vec<Failed>,
}

/// A sealed copy written and checked, not switched to yet.
pub struct SealedCopy {
    stored: StoredFile,
}

/// What happened to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Encrypted,
    DeletedMeanwhile,
    /// Another run holds it.
    Busy,
}

pub struct EncryptInPlace {
    db: Db,
    plain: Arc<dyn SweptStore>,
    sealed: SealedStore,
}

impl EncryptInPlace {
    /// Over the store as it is (not sealing), with the keys the application runs with: copies are
    /// wrapped under the key new files are (the next one during a rotation).
    pub fn new(db: Db, plain: Arc<dyn SweptStore>, keys: KeyRing) -> Self {
        let sealed = SealedStore::new(plain.clone(), db.clone(), keys, true, Metrics::default());
        Self { db, plain, sealed }
    }

    /// Finishes what stopped runs left, then encrypts every live plaintext file, `batch` rows per
    /// read.
    pub async fn run(&self, batch: u32) -> anyhow::Result<EncryptReport> {
        let mut report = EncryptReport::default();
        self.finish_interrupted(&mut report).await?;
        let mut after = 0;
        while let Some(last) = self.run_batch(after, batch, &mut report).await? {
            after = last;
        }
        Ok(report)
    }

    /// One batch of up to `batch` files after id `after`: the last id read, or `None` when none
    /// was left.
    pub async fn run_batch(&self, after: i64, batch: u32, report: &mut EncryptReport) -> anyhow::Result<Option<i64>> {
        let files: Vec<PlainFile> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&PLAINTEXT_FILES)).bind(after).bind(i64::from(batch.max(1))).fetch_all(pool).await
        })?;
        let Some(last) = files.last().map(|file| file.id) else { return Ok(None) };
        for file in &files {
            let failed = |reason| Failed { file_id: file.id, name: file.original_name.clone(), reason };
            let copy = match self.seal_copy(file).await {
                Ok(Some(copy)) => copy,
                Ok(None) => continue,
                Err(CopyError::Mismatch) => {
                    report.failed.push(failed("its stored bytes do not match the recorded SHA-256"));
                    continue;
                }
                Err(CopyError::Missing) => {
                    report.failed.push(failed("its stored bytes are missing"));
                    continue;
                }
                Err(CopyError::Damaged) => {
                    report.failed.push(failed("its sealed copy did not read back"));
                    continue;
                }
                Err(CopyError::Failed(error)) => return Err(error),
            };
            match self.switch(file, copy).await? {
                Outcome::Encrypted => report.encrypted += 1,
                Outcome::DeletedMeanwhile => report.deleted_meanwhile += 1,
                Outcome::Busy => {}
            }
        }
        Ok(Some(last))
    }

    /// Writes `file`'s sealed copy and checks it: `None` when another run has the file.
    pub async fn seal_copy(&self, file: &PlainFile) -> Result<Option<SealedCopy>, CopyError> {
        let begun = on_db!(&self.db, |pool| {
            Ok::<_, sqlx::Error>(
                sqlx::query(pool.sql(&BEGIN))
                    .bind(file.id)
                    .bind(&file.storage_key)
                    .execute(pool)
                    .await?
                    .rows_affected(),
            )
        })?;
        if begun == 0 {
            return Ok(None);
        }
        let size = u64::try_from(file.size_bytes).unwrap_or(0);
        let stored = match self.plain.open(&file.storage_key).await {
            Ok(source) => self.sealed.put_sealed(source.into_reader(), size).await,
            Err(error) => Err(error),
        };
        let stored = match stored {
            Ok(stored) => stored,
            Err(error) => {
                self.forget(file.id).await?;
                return Err(match error {
                    StoreError::NotFound => CopyError::Missing,
                    StoreError::TooLarge { .. } => CopyError::Mismatch,
                    other => CopyError::Failed(other.into()),
                });
            }
        };
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&RECORD_COPY)).bind(&stored.key).bind(file.id).execute(pool).await.map(drop)
        })?;
        let check = match self.sealed.read_back_sealed(&stored).await {
            Ok(found) if found.size_bytes == size && found.sha256 == file.sha256 => Ok(()),
            Ok(_) => Err(CopyError::Mismatch),
            Err(StoreError::Damaged | StoreError::NotFound) => Err(CopyError::Damaged),
            Err(error) => Err(CopyError::Failed(error.into())),
        };
        if let Err(error) = check {
            self.plain.delete(&stored.key).await.map_err(anyhow::Error::from)?;
            self.forget(file.id).await?;
            return Err(error);
        }
        Ok(Some(SealedCopy { stored }))
    }

    /// Switches `file`'s row to its checked copy and deletes the plaintext, or deletes the copy
    /// when the file was deleted or changed meanwhile.
    pub async fn switch(&self, file: &PlainFile, copy: SealedCopy) -> anyhow::Result<Outcome> {
        let wrapped = copy.stored.sealed.as_ref().expect("a sealed copy has a wrapped key");
        let switched = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SWITCH))
                .bind(&copy.stored.key)
                .bind(&wrapped.wrapped)
                .bind(&wrapped.key_id)
                .bind(file.id)
                .bind(&file.storage_key)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        let outcome = if switched == 1 {
            self.plain.delete(&file.storage_key).await?;
            Outcome::Encrypted
        } else {
            self.plain.delete(&copy.stored.key).await?;
            Outcome::DeletedMeanwhile
        };
        self.forget(file.id).await?;
        Ok(outcome)
    }

    /// Deletes what runs that stopped left: the copy when the row was not switched to it, the
    /// plaintext when it was. Run before a new run starts (one run at a time).
    pub async fn finish_interrupted(&self, report: &mut EncryptReport) -> anyhow::Result<()> {
        let left: Vec<Interrupted> =
            on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&INTERRUPTED)).fetch_all(pool).await)?;
        for entry in left {
            let orphan = match &entry.sealed_key {
                Some(sealed) if entry.current_key.as_ref() == Some(sealed) => Some(&entry.plain_key),
                Some(sealed) => Some(sealed),
                None => None,
            };
            if let Some(key) = orphan {
                self.plain.delete(key).await?;
                report.cleaned_up += 1;
            }
            self.forget(entry.file_id).await?;
        }
        Ok(())
    }

    async fn forget(&self, file_id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&DONE)).bind(file_id).execute(pool).await.map(drop))?;
        Ok(())
    }
}

/// Why a file's sealed copy was not made.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("the stored bytes do not match the recorded digest")]
    Mismatch,
    #[error("the stored bytes are missing")]
    Missing,
    #[error("the sealed copy did not read back")]
    Damaged,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<sqlx::Error> for CopyError {
    fn from(error: sqlx::Error) -> Self {
        Self::Failed(error.into())
    }
}
