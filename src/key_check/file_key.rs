//! The file key at start-up: WATASU_FILE_KEY, the data folder's `file.key`, or made there only
//! while no encrypted file needs the old one; refused when encrypted files were stored under another
//! key, or when it is not the key the deployment recorded (an instance that made its own).

use crate::{
    config::Config,
    db::{Db, Dialect, Sql},
    on_db,
    secret::SecretKey,
    storage::sealed::{FileKeys, KeyRing, key_record::FileKeyRecord},
};

/// The file key's file in the data folder (unless WATASU_FILE_KEY is set).
pub const FILE_KEY_FILE: &str = "file.key";

/// Live encrypted files (and finished uploads not shared yet): only the file key opens them.
const SEALED_FILES: Sql = Sql::same(
    "SELECT (SELECT count(*) FROM files WHERE wrapped_key IS NOT NULL)
          + (SELECT count(*) FROM uploads WHERE wrapped_key IS NOT NULL)",
);

/// Start-up refused: the file key is gone and the database holds files encrypted under it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is missing, but the database holds {files} encrypted file(s) only that key opens: restore it \
     from your backup (or set WATASU_FILE_KEY to its value)",
    path.display()
)]
pub struct FileKeyMissing {
    pub path: std::path::PathBuf,
    pub files: i64,
}

/// Live encrypted files whose keys are wrapped under neither file key ($1, $2: their ids; the same
/// id twice when no rotation runs).
const SEALED_UNDER_ANOTHER_KEY: Sql = Sql::same(
    "SELECT (SELECT count(*) FROM files WHERE wrapped_key IS NOT NULL AND file_key_id <> $1 AND file_key_id <> $2)
          + (SELECT count(*) FROM uploads WHERE wrapped_key IS NOT NULL AND file_key_id <> $1 AND file_key_id <> $2)",
);

/// How many live encrypted files each file key holds, by the key's id.
const FILES_BY_KEY: Sql = Sql::same(
    "SELECT file_key_id, count(*) FROM (SELECT file_key_id FROM files WHERE wrapped_key IS NOT NULL
                                        UNION ALL SELECT file_key_id FROM uploads WHERE wrapped_key IS NOT NULL) k
      GROUP BY file_key_id ORDER BY file_key_id",
);

/// Start-up refused: the file key given is not the one encrypted files were stored under; every
/// download of those files would fail as damaged.
#[derive(Debug, thiserror::Error)]
#[error(
    "the file key ({origin}, id {key_id}) is not the key {files} encrypted file(s) were stored under, so none \
     of them would open; the files are under {}: set the key they were stored under (restore {FILE_KEY_FILE} \
     from your backup, or set WATASU_FILE_KEY to its value); when they are under two keys (instances that \
     each made their own), set WATASU_FILE_KEY to one and WATASU_FILE_KEY_NEXT to the other on every \
     instance: both open, and `watasu keys rotate` moves every file under the second",
    describe(stored_under)
)]
pub struct FileKeyWrong {
    /// Where the key came from: `WATASU_FILE_KEY` or the key file's path.
    pub origin: String,
    pub key_id: String,
    pub files: i64,
    /// Each key id the live encrypted files are under, with how many.
    pub stored_under: Vec<(String, i64)>,
}

fn describe(stored_under: &[(String, i64)]) -> String {
    let keys: Vec<String> = stored_under.iter().map(|(id, files)| format!("file key id {id} ({files})")).collect();
    keys.join(", ")
}

/// Start-up refused: another file key is the deployment's (an instance that made a `file.key` of
/// its own, beside one that already stores files encrypted).
#[derive(Debug, thiserror::Error)]
#[error(
    "the file key ({origin}, id {key_id}) is not this deployment's file key (id {recorded}, recorded by the \
     first instance that stored files encrypted): every instance needs that one key, or files stored \
     through one would not open through another; copy {FILE_KEY_FILE} from that instance (or set \
     WATASU_FILE_KEY to its value on every instance). To move to this key instead, set it as \
     WATASU_FILE_KEY_NEXT beside that one on every instance and run `watasu keys rotate`"
)]
pub struct FileKeyNotTheDeployments {
    pub origin: String,
    pub key_id: String,
    pub recorded: String,
}

/// Start-up refused: no key file here, and the deployment's file key was made by another instance
/// (a new key here would be a second one).
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is missing, and this deployment's file key (id {recorded}) was made by another instance: copy that \
     instance's {FILE_KEY_FILE} here (or set WATASU_FILE_KEY to its value on every instance)",
    path.display()
)]
pub struct FileKeyNotCopied {
    pub path: std::path::PathBuf,
    pub recorded: String,
}

/// The file keys the store wraps and unwraps with (WATASU_FILE_KEY, and WATASU_FILE_KEY_NEXT
/// while a rotation runs), refused at start-up when live encrypted files were stored under
/// another file key, or when neither is the deployment's recorded key. With WATASU_ENCRYPT_FILES
/// the first instance records its key. Once a rotation has re-wrapped every file, the next key
/// alone passes.
pub async fn load_file_keys(config: &Config, db: &Db) -> anyhow::Result<KeyRing> {
    let current = FileKeys::new(&load_file_key(config, db).await?);
    let next = match &config.settings.file_key_next {
        Some(hex) => Some(FileKeys::new(
            &SecretKey::from_hex(hex.expose()).map_err(|e| anyhow::anyhow!("WATASU_FILE_KEY_NEXT {e}"))?,
        )),
        None => None,
    };
    let keys = KeyRing::new(current, next);
    let (first, second) = (keys.current().id(), keys.wrapping().id());
    let origin = || match config.settings.file_key {
        Some(_) => "WATASU_FILE_KEY".to_owned(),
        None => config.settings.data_dir.join(FILE_KEY_FILE).display().to_string(),
    };
    let files: i64 = on_db!(db, |pool| {
        sqlx::query_scalar(pool.sql(&SEALED_UNDER_ANOTHER_KEY)).bind(first).bind(second).fetch_one(pool).await
    })?;
    if files > 0 {
        let stored_under = on_db!(db, |pool| sqlx::query_as(pool.sql(&FILES_BY_KEY)).fetch_all(pool).await)?;
        return Err(FileKeyWrong { origin: origin(), key_id: first.to_owned(), files, stored_under }.into());
    }
    let record = FileKeyRecord::new(db.clone());
    let recorded = match config.settings.encrypt_files {
        true => Some(record.record_first(first).await?),
        false => record.recorded().await?,
    };
    if let Some(recorded) = recorded
        && recorded != first
        && recorded != second
    {
        // Live encrypted files, all under this ring (checked above), name the key better than the
        // record: a rotation finished batch by batch left the record behind.
        let sealed: i64 = on_db!(db, |pool| sqlx::query_scalar(pool.sql(&SEALED_FILES)).fetch_one(pool).await)?;
        if sealed == 0 {
            return Err(FileKeyNotTheDeployments { origin: origin(), key_id: first.to_owned(), recorded }.into());
        }
        record.replace(first).await?;
    }
    Ok(keys)
}

/// The key stored files' keys are wrapped under: WATASU_FILE_KEY, the data folder's file.key, or
/// a new key in that file when no encrypted file needs the old one and no instance made one yet.
async fn load_file_key(config: &Config, db: &Db) -> anyhow::Result<SecretKey> {
    if let Some(hex) = &config.settings.file_key {
        return SecretKey::from_hex(hex.expose()).map_err(|e| anyhow::anyhow!("WATASU_FILE_KEY {e}"));
    }
    let path = config.settings.data_dir.join(FILE_KEY_FILE);
    if let Some(key) = SecretKey::load(&path)? {
        return Ok(key);
    }
    let files: i64 = on_db!(db, |pool| sqlx::query_scalar(pool.sql(&SEALED_FILES)).fetch_one(pool).await)?;
    if files > 0 {
        return Err(FileKeyMissing { path, files }.into());
    }
    if let Some(recorded) = FileKeyRecord::new(db.clone()).recorded().await? {
        return Err(FileKeyNotCopied { path, recorded }.into());
    }
    SecretKey::generate(&path)
}
