//! The file store the settings name, checked once at start-up, and the cheap probe `/readyz` uses.

use std::{sync::Arc, time::Duration};

use object_store::{ObjectStore, RetryConfig, aws::AmazonS3ConfigKey, path::Path as ObjectPath};

use super::{FallbackStore, FileStore, LocalFileStore, ObjectFileStore, StoreError, SweptStore, sealed::SealedStore};
use crate::{
    config::{Config, ConfigError, Storage, StorageSettings},
    db::Db,
    metrics::Metrics,
    secret::random_token,
};

/// An unreachable store fails a request after a few quick tries, not after the client's default
/// three minutes: a download then answers 503 while the recipient still waits for it.
fn retry_config() -> RetryConfig {
    RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(10), ..RetryConfig::default() }
}

/// The store of the settings, once it has answered a first request. A store that cannot be
/// reached stops start-up with one line naming the setting to fix (never a secret).
pub async fn open_file_store(config: &Config) -> anyhow::Result<Arc<dyn SweptStore>> {
    match &config.storage {
        Storage::Local(dir) => {
            let store = LocalFileStore::new(dir).map_err(|e| {
                ConfigError::new("WATASU_STORAGE", format!("the folder {} cannot be created ({e})", dir.display()))
            })?;
            Ok(Arc::new(store))
        }
        Storage::S3(url) => {
            let store = Arc::new(open_object_store(config, url).await?);
            // Files an earlier local setup left in DATA_DIR/files are read from there until
            // `watasu storage migrate` has moved them.
            let folder = config.settings.data_dir.join("files");
            if holds_anything(&folder) {
                tracing::info!("files not moved into the object store yet are read from DATA_DIR/files");
                return Ok(Arc::new(FallbackStore::new(store, LocalFileStore::new(folder)?)));
            }
            Ok(store)
        }
    }
}

/// The store the application runs on: the store of the settings under the sealing of stored files
/// (`WATASU_ENCRYPT_FILES`), with the file key loaded (or made) once.
pub async fn open_sealed_store(config: &Config, db: &Db, metrics: Metrics) -> anyhow::Result<Arc<dyn SweptStore>> {
    let plain = open_file_store(config).await?;
    let keys = crate::key_check::load_file_keys(config, db).await?;
    Ok(Arc::new(SealedStore::new(plain, db.clone(), keys, config.settings.encrypt_files, metrics)))
}

/// The object store at `url`, checked once.
pub async fn open_object_store(config: &Config, url: &str) -> anyhow::Result<ObjectFileStore> {
    let settings = &config.settings.storage;
    check_bucket(url, settings).await?;
    let builder = settings.s3_builder().with_retry(retry_config());
    Ok(ObjectFileStore::from_url_with(url, builder).map_err(|e| ConfigError::new("WATASU_STORAGE", e.to_string()))?)
}

fn holds_anything(folder: &std::path::Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|mut entries| entries.next().is_some())
}

/// Whether the store answers now: a look at a key that cannot exist, where "not found" is the
/// answer of a working store (one HEAD for a bucket, one `open` for a folder).
pub async fn probe(store: &dyn FileStore) -> Result<(), StoreError> {
    match store.open_range(random_token().expose(), 0, 0).await {
        Ok(_) | Err(StoreError::NotFound) => Ok(()),
        Err(error) => Err(error),
    }
}

/// One HEAD of a key that cannot exist (endpoint and credentials), then one listing of the prefix
/// (S3 answers a HEAD in a missing bucket with the same 404 as a missing key).
async fn check_bucket(url: &str, settings: &StorageSettings) -> Result<(), ConfigError> {
    let rest = url.trim_start_matches("s3://");
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let builder = settings.s3_builder().with_retry(RetryConfig { max_retries: 1, ..retry_config() });
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint).unwrap_or_else(|| "AWS S3".to_owned());
    let objects = builder
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| ConfigError::new("WATASU_STORAGE", format!("the S3 settings are incomplete ({e})")))?;
    let refused = |error: object_store::Error| refusal(&error, bucket, &endpoint);
    match objects.head(&ObjectPath::from(format!("{}/{}", prefix, random_token().expose()))).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
        Err(error) => return Err(refused(error)),
    }
    let prefix = (!prefix.trim_matches('/').is_empty()).then(|| ObjectPath::from(prefix));
    objects.list_with_delimiter(prefix.as_ref()).await.map(drop).map_err(refused)
}

/// The setting to fix for a failed check, told in one line.
fn refusal(error: &object_store::Error, bucket: &str, endpoint: &str) -> ConfigError {
    let mut text = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        text.push_str(&current.to_string());
        cause = current.source();
    }
    // A transport failure (no connection, no answer) wraps an `HttpError`, which the client's
    // request error shows but hides from the chain of sources: its text tells.
    if text.contains("HTTP error") {
        return ConfigError::new("AWS_ENDPOINT_URL", format!("the store at {endpoint} does not answer"));
    }
    // Statuses by their reason phrases: a bare "403" may be part of the endpoint's port.
    let says = |codes: &[&str]| codes.iter().any(|code| text.contains(code));
    let credentials =
        matches!(error, object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. })
            || says(&[
                "403 Forbidden",
                "401 Unauthorized",
                "AccessDenied",
                "InvalidAccessKeyId",
                "SignatureDoesNotMatch",
            ]);
    if credentials {
        return ConfigError::new(
            "AWS_ACCESS_KEY_ID",
            format!("the store at {endpoint} refuses these credentials (check AWS_SECRET_ACCESS_KEY too)"),
        );
    }
    if says(&["NoSuchBucket", "404 Not Found"]) {
        return ConfigError::new("WATASU_STORAGE", format!("the bucket {bucket:?} does not exist at {endpoint}"));
    }
    ConfigError::new("WATASU_STORAGE", format!("the store at {endpoint} refused the start-up check"))
}

#[cfg(test)]
mod tests {
    use super::refusal;

    fn store_error(text: &str) -> object_store::Error {
        object_store::Error::Generic { store: "S3", source: text.into() }
    }

    #[test]
    fn a_port_with_a_status_code_in_it_does_not_decide_the_setting() {
        let endpoint = "http://127.0.0.1:34403";
        let missing =
            store_error(&format!("Client error with status 404 Not Found: NoSuchBucket, url {endpoint}/files"));
        assert_eq!(refusal(&missing, "files", endpoint).setting, "WATASU_STORAGE");
        let refused =
            store_error(&format!("Client error with status 403 Forbidden: AccessDenied, url {endpoint}/files"));
        assert_eq!(refusal(&refused, "files", endpoint).setting, "AWS_ACCESS_KEY_ID");
    }
}
