//! Encrypted stored files for the encrypted transfers: one sealed copy of a file, made once with
//! the library's sealing as `--encrypt-files` stores a file, and a share of it per download: a
//! hard link under a new storage key, its data key re-wrapped for that key (the wrapped key names
//! its storage key, so a copy's row cannot reuse the original's).

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use watasu::{
    secret::{SecretKey, random_token},
    storage::sealed::{DataKey, FileKeys, WrappedKey, seal},
};

use super::{downloads, procs::FILE_KEY};

/// The file keys of the run's servers (`procs::FILE_KEY`).
fn file_keys() -> FileKeys {
    FileKeys::new(&SecretKey::from_hex(FILE_KEY).unwrap())
}

/// A file sealed under its own data key, wrapped for `key`.
pub struct SealedCopy {
    pub path: PathBuf,
    pub segment: u32,
    pub plain_bytes: u64,
    key: String,
    wrapped: WrappedKey,
}

impl SealedCopy {
    /// Seals `plain` into `path` in segments of `segment` plaintext bytes, and flushes it to disk
    /// so that its write-back does not land in a measurement.
    pub async fn make(plain: &Path, path: PathBuf, segment: u32) -> Self {
        let data_key = DataKey::generate();
        let mut sealed = seal(&data_key, segment, tokio::fs::File::open(plain).await.unwrap());
        let mut out = tokio::io::BufWriter::with_capacity(1 << 20, tokio::fs::File::create(&path).await.unwrap());
        while let Some(chunk) = sealed.next().await {
            out.write_all(&chunk.unwrap()).await.unwrap();
        }
        out.flush().await.unwrap();
        out.into_inner().sync_all().await.unwrap();
        let key = random_token().expose().to_owned();
        let wrapped = file_keys().wrap(&key, &data_key);
        Self { path, segment, plain_bytes: std::fs::metadata(plain).unwrap().len(), key, wrapped }
    }

    /// The data key wrapped for a link of this copy stored under `key`.
    fn wrapped_for(&self, key: &str) -> WrappedKey {
        let keys = file_keys();
        let data_key = keys.unwrap(&self.key, &self.wrapped.wrapped).expect("the sealed copy's key opens");
        keys.wrap(key, &data_key)
    }

    pub fn remove(self) {
        std::fs::remove_file(&self.path).unwrap();
    }
}

/// A new share whose file is a hard link of `copy`, its row sealed with the data key wrapped for
/// the link's storage key; returns its link token.
pub async fn share_of(db: &watasu::db::Db, data: &Path, copy: &SealedCopy) -> String {
    downloads::share_of_link(db, data, &copy.path, copy.plain_bytes, |key| Some(copy.wrapped_for(key))).await
}

/// The SHA-256 of a file, in hex.
pub fn sha256_of_file(path: &Path) -> String {
    sha256_of(std::fs::File::open(path).unwrap())
}

/// The SHA-256 of the bytes of a share's one download (curl, as in the timed downloads).
pub fn sha256_of_download(base: &str, token: &str, cookie: &str, csrf: &str) -> String {
    let mut curl = Command::new("curl")
        .args(["-s", "-S", "-f", "-L", "-H", &format!("Cookie: {cookie}"), "-H", "Sec-Fetch-Site: same-origin"])
        .args(["--data", &format!("csrf_token={csrf}"), &format!("{base}/s/{token}/download")])
        .stdout(Stdio::piped())
        .spawn()
        .expect("running curl");
    let digest = sha256_of(curl.stdout.take().unwrap());
    assert!(curl.wait().unwrap().success(), "the checked download failed");
    digest
}

fn sha256_of(mut bytes: impl Read) -> String {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = bytes.read(&mut buffer).unwrap();
        if read == 0 {
            return hex::encode(hasher.finalize());
        }
        hasher.update(&buffer[..read]);
    }
}
