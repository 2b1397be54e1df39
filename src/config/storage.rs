//! Where stored files live: a local folder or an S3-compatible bucket, and the standard `AWS_*`
//! settings that reach the bucket. Those are read as the AWS tools read them; clap takes them too
//! so that a test can give them in code without touching the process environment.

use std::path::PathBuf;

use object_store::{
    ClientConfigKey,
    aws::{AmazonS3Builder, AmazonS3ConfigKey},
};

use super::ConfigError;
use crate::secret::SecretString;

/// The storage settings as given.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct StorageSettings {
    /// Where stored files live: a local folder, or `s3://BUCKET[/PREFIX]` (with the AWS_* settings
    /// below). Defaults to DATA_DIR/files.
    #[arg(long = "storage", env = "WATASU_STORAGE", global = true)]
    pub location: Option<String>,

    /// The S3 endpoint (MinIO, R2, Garage…); unset: AWS itself.
    #[arg(long = "aws-endpoint-url", env = "AWS_ENDPOINT_URL", global = true)]
    pub endpoint_url: Option<String>,

    /// The bucket's region.
    #[arg(long = "aws-region", env = "AWS_REGION", global = true)]
    pub region: Option<String>,

    #[arg(long = "aws-access-key-id", env = "AWS_ACCESS_KEY_ID", global = true)]
    pub access_key_id: Option<String>,

    #[arg(long = "aws-secret-access-key", env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true, global = true)]
    pub secret_access_key: Option<SecretString>,

    /// Allow a plain-http endpoint (a store on the same host or network).
    #[arg(long = "aws-allow-http", env = "AWS_ALLOW_HTTP", global = true)]
    pub allow_http: Option<String>,

    /// Send uploads without signing their bytes (`true`/`false`). Unset: unsigned over https,
    /// where TLS already protects them, signed over plain http.
    #[arg(long = "aws-unsigned-payload", env = "AWS_UNSIGNED_PAYLOAD", global = true)]
    pub unsigned_payload: Option<String>,
}

/// The validated place of stored files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    Local(PathBuf),
    /// An `s3://BUCKET[/PREFIX]` URL.
    S3(String),
}

impl StorageSettings {
    /// The place of stored files; anything with a scheme other than `s3://` is refused rather than
    /// taken for a folder named `gs:`.
    pub fn storage(&self, data_dir: &std::path::Path) -> Result<Storage, ConfigError> {
        let Some(location) = self.location.as_deref().filter(|l| !l.is_empty()) else {
            return Ok(Storage::Local(data_dir.join("files")));
        };
        if let Some(rest) = location.strip_prefix("s3://") {
            let bucket = rest.split('/').next().unwrap_or_default();
            if bucket.is_empty() {
                return Err(ConfigError::new("WATASU_STORAGE", format!("{location:?} names no bucket")));
            }
            return Ok(Storage::S3(location.to_owned()));
        }
        if location.contains("://") {
            return Err(ConfigError::new(
                "WATASU_STORAGE",
                format!("{location:?} is neither a folder nor s3://BUCKET[/PREFIX]"),
            ));
        }
        Ok(Storage::Local(PathBuf::from(location)))
    }

    /// The S3 client settings: every `AWS_*` variable the environment holds, with those given here
    /// on top.
    pub fn s3_builder(&self) -> AmazonS3Builder {
        let mut builder = AmazonS3Builder::from_env();
        let given = [
            (AmazonS3ConfigKey::Endpoint, self.endpoint_url.clone()),
            (AmazonS3ConfigKey::Region, self.region.clone()),
            (AmazonS3ConfigKey::AccessKeyId, self.access_key_id.clone()),
            (AmazonS3ConfigKey::SecretAccessKey, self.secret_access_key.as_ref().map(|s| s.expose().to_owned())),
            (AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp), self.allow_http.clone()),
        ];
        for (key, value) in given {
            if let Some(value) = value {
                builder = builder.with_config(key, value);
            }
        }
        // A payload's signature costs a second SHA-256 of every byte here and its check in the
        // store (about 0.9 and 0.7 CPU seconds per GiB, docs/decisions/); over TLS it only repeats
        // what TLS guarantees, over plain http it is what protects the bytes.
        let over_tls = builder.get_config_value(&AmazonS3ConfigKey::Endpoint).is_none_or(|e| e.starts_with("https://"));
        let unsigned = self.unsigned_payload.clone().unwrap_or_else(|| over_tls.to_string());
        builder.with_config(AmazonS3ConfigKey::UnsignedPayload, unsigned)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use object_store::aws::AmazonS3ConfigKey;

    use super::{Storage, StorageSettings};

    fn storage(location: &str) -> Result<Storage, super::ConfigError> {
        StorageSettings { location: Some(location.to_owned()), ..StorageSettings::default() }
            .storage(Path::new("/data"))
    }

    #[test]
    fn storage_is_a_folder_or_an_s3_bucket() {
        let default = StorageSettings::default().storage(Path::new("/data")).unwrap();
        assert_eq!(default, Storage::Local("/data/files".into()));
        assert_eq!(storage("/srv/files").unwrap(), Storage::Local("/srv/files".into()));
        assert_eq!(storage("s3://files/watasu").unwrap(), Storage::S3("s3://files/watasu".into()));
        for bad in ["s3://", "s3:///x", "gs://files", "https://s3.example.com/files"] {
            assert_eq!(storage(bad).unwrap_err().setting, "WATASU_STORAGE", "{bad}");
        }
    }

    #[test]
    fn payloads_go_unsigned_over_tls_only_unless_the_setting_says_otherwise() {
        let unsigned = |endpoint: Option<&str>, setting: Option<&str>| {
            let settings = StorageSettings {
                endpoint_url: endpoint.map(str::to_owned),
                unsigned_payload: setting.map(str::to_owned),
                ..StorageSettings::default()
            };
            settings.s3_builder().get_config_value(&AmazonS3ConfigKey::UnsignedPayload).unwrap()
        };
        assert_eq!(unsigned(Some("https://s3.example.test"), None), "true");
        assert_eq!(unsigned(Some("http://127.0.0.1:3900"), None), "false");
        assert_eq!(unsigned(Some("https://s3.example.test"), Some("false")), "false");
        assert_eq!(unsigned(Some("http://127.0.0.1:3900"), Some("true")), "true");
    }

    #[test]
    fn the_secret_access_key_stays_out_of_debug_output() {
        let settings = StorageSettings {
            secret_access_key: Some(crate::secret::SecretString::new("hunter2")),
            ..StorageSettings::default()
        };
        assert!(!format!("{settings:?}").contains("hunter2"));
    }
}
