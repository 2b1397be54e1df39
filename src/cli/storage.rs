//! `watasu storage migrate`: moves the files of DATA_DIR/files into the object store that
//! WATASU_STORAGE names, while the server keeps serving them (see `storage::migrate`);
//! `watasu storage encrypt`: encrypts the files stored plaintext, in place.

use crate::{
    config::{Config, Storage},
    key_check::load_file_keys,
    services::Services,
    storage::{
        open_file_store, open_object_store,
        sealed::encrypt_in_place::{EncryptInPlace, EncryptReport},
    },
};

pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    let Storage::S3(url) = &config.storage else {
        return Err(super::usage(
            "WATASU_STORAGE names a local folder: set it to s3://BUCKET[/PREFIX] (with the AWS_* settings) first",
        ));
    };
    let target = open_object_store(config, url).await?;
    let services = Services::open(config).await?;
    let report = services.file_moves.folder_into(&target).await;
    services.close().await;
    let report = report?;
    crate::outln!(
        "moved {}, already in the store {}, deleted meanwhile {}; left in the folder: {} no longer needed \
         (the leftover sweep removes them), {} not matching their recorded digest",
        report.moved,
        report.already_there,
        report.deleted_meanwhile,
        report.not_needed,
        report.mismatched
    );
    Ok(())
}

/// `watasu storage encrypt`: encrypts in place the files stored plaintext (see
/// `storage::sealed::encrypt_in_place`); fails, naming them, when some could not be.
pub async fn encrypt(config: &Config, batch: u32) -> anyhow::Result<()> {
    let db = crate::open_database(config).await?;
    let report = encrypt_on(config, &db, batch).await;
    db.close().await;
    let report = report?;
    crate::outln!(
        "encrypted {}, deleted meanwhile {}, left by an earlier run and removed now {}",
        report.encrypted,
        report.deleted_meanwhile,
        report.cleaned_up
    );
    if report.failed.is_empty() {
        return Ok(());
    }
    for failed in &report.failed {
        crate::outln!("left plaintext: file {} ({}): {}", failed.file_id, failed.name, failed.reason);
    }
    anyhow::bail!("{} file(s) could not be encrypted and are still stored plaintext", report.failed.len())
}

async fn encrypt_on(config: &Config, db: &crate::db::Db, batch: u32) -> anyhow::Result<EncryptReport> {
    let keys = load_file_keys(config, db).await?;
    let plain = open_file_store(config).await?;
    EncryptInPlace::new(db.clone(), plain, keys).run(batch).await
}
