//! `watasu storage migrate`: moves the files of DATA_DIR/files into the object store that
//! WATASU_STORAGE names, while the server keeps serving them (see `storage::migrate`).

use crate::{
    config::{Config, Storage},
    services::Services,
    storage::open_object_store,
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
