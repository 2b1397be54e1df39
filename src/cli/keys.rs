//! `watasu keys rotate`: re-wraps every encrypted file's key from WATASU_FILE_KEY to
//! WATASU_FILE_KEY_NEXT (see `storage::sealed::rotate`), then tells the operator what to set.

use crate::{cli::usage, config::Config, key_check::load_file_keys, storage::sealed::rotate::Rotation};

pub async fn rotate(config: &Config, batch: u32) -> anyhow::Result<()> {
    if config.settings.file_key_next.is_none() {
        return Err(usage(
            "WATASU_FILE_KEY_NEXT is not set: set it to the new key (64 hex characters, e.g. from \
             `openssl rand -hex 32`) on every instance, restart them, then run this again",
        ));
    }
    let db = crate::open_database(config).await?;
    let rotated = rotate_on(config, &db, batch).await;
    db.close().await;
    rotated
}

async fn rotate_on(config: &Config, db: &crate::db::Db, batch: u32) -> anyhow::Result<()> {
    let keys = load_file_keys(config, db).await?;
    let Some(rotation) = Rotation::new(db.clone(), &keys) else {
        return Err(usage("WATASU_FILE_KEY_NEXT is the file key in use already: there is nothing to rotate to"));
    };
    let report = rotation.run(batch).await?;
    let remaining = rotation.remaining().await?;
    crate::outln!(
        "re-wrapped {} file key(s) from file key {} to file key {}; {} changed meanwhile (deleted)",
        report.rewrapped,
        rotation.from_id(),
        rotation.to_id(),
        report.changed_meanwhile
    );
    if !report.not_opened.is_empty() || remaining > 0 {
        let ids: Vec<String> = report.not_opened.iter().map(i64::to_string).collect();
        anyhow::bail!(
            "{remaining} encrypted file(s) are still not under the new key (files whose key opened under \
             neither key: {}); keep WATASU_FILE_KEY as it is and run this again",
            if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
        );
    }
    crate::outln!(
        "every encrypted file's key is now wrapped under file key {}: set WATASU_FILE_KEY to the value of \
         WATASU_FILE_KEY_NEXT on every instance (or write it into DATA_DIR/file.key where the key file is \
         used), remove WATASU_FILE_KEY_NEXT and restart; the old key is then no longer needed",
        rotation.to_id()
    );
    Ok(())
}
