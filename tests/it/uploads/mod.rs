//! The tus endpoint at /uploads: the protocol's answers, durability across cut connections,
//! racing and killed servers, expiry and collection, and shares made from finished uploads.

pub(crate) mod durability;
mod expiry;
mod killed;
mod parts;
mod pieces;
mod protocol;
mod sharing;
mod terminate_race;

use base64::{Engine, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};

use crate::support::{Browser, Page, TestApp};

/// A signed-in sender's tus client: the browser with its cookies and the page's CSRF token.
pub struct Tus {
    pub browser: Browser,
    pub csrf: String,
}

impl Tus {
    /// A fresh sender, signed in, holding the new-share page's CSRF token.
    pub async fn sender(app: &TestApp, email: &str) -> Self {
        let browser = app.signed_in_sender(email).await;
        let csrf = browser.get("/shares/new").await.csrf_token();
        Self { browser, csrf }
    }

    /// A request with the headers tus-js-client sends on every request.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.browser
            .client
            .request(method, self.browser.url(path))
            .header("Tus-Resumable", "1.0.0")
            .header("X-CSRF-Token", &self.csrf)
            .header("Sec-Fetch-Site", "same-origin")
    }

    /// POST /uploads for `length` bytes named `name`; answers the page.
    pub async fn create_named(&self, length: u64, name: &str) -> Page {
        let metadata = format!("filename {},filetype {}", STANDARD.encode(name), STANDARD.encode("text/plain"));
        let request = self.request(reqwest::Method::POST, "/uploads").header("Upload-Length", length.to_string());
        Page::read(request.header("Upload-Metadata", metadata).send().await.unwrap()).await
    }

    /// Creates an upload and answers its path (`/uploads/{id}`).
    pub async fn create(&self, length: u64) -> String {
        let page = self.create_named(length, "report.txt").await;
        assert_eq!(page.status, 201, "{}", page.body);
        page.header("location").unwrap().to_owned()
    }

    pub async fn head(&self, path: &str) -> Page {
        Page::read(self.request(reqwest::Method::HEAD, path).send().await.unwrap()).await
    }

    /// The upload's offset as HEAD reports it.
    pub async fn offset(&self, path: &str) -> u64 {
        let page = self.head(path).await;
        assert_eq!(page.status, 200, "{path}");
        page.header("upload-offset").unwrap().parse().unwrap()
    }

    pub async fn patch_with(&self, path: &str, offset: u64, body: Vec<u8>, headers: &[(&str, &str)]) -> Page {
        let mut request = self
            .request(reqwest::Method::PATCH, path)
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Page::read(request.body(body).send().await.unwrap()).await
    }

    pub async fn patch(&self, path: &str, offset: u64, body: &[u8]) -> Page {
        self.patch_with(path, offset, body.to_vec(), &[]).await
    }

    pub async fn delete(&self, path: &str) -> Page {
        Page::read(self.request(reqwest::Method::DELETE, path).send().await.unwrap()).await
    }

    /// Creates an upload of `content` and sends it whole; answers its path.
    pub async fn upload(&self, content: &[u8]) -> String {
        let path = self.create(content.len() as u64).await;
        let page = self.patch(&path, 0, content).await;
        assert_eq!(page.status, 204, "{}", page.body);
        path
    }
}

/// The upload id in an upload's path.
pub fn id_of(path: &str) -> &str {
    path.strip_prefix("/uploads/").unwrap()
}

/// The app's local store folder.
fn files_dir(app: &TestApp) -> std::path::PathBuf {
    app.data_dir.path().join("files")
}

/// The storage key of the upload at `path`.
async fn storage_key(app: &TestApp, path: &str) -> String {
    let id = id_of(path).to_owned();
    watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT storage_key FROM uploads WHERE public_id = $1")
            .bind(&id)
            .fetch_one(pool)
            .await
            .unwrap()
    })
}

/// A body that yields `bytes`, then fails like a connection cut off.
pub fn cut_after(bytes: Vec<u8>) -> std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>> {
    struct Cut;
    impl tokio::io::AsyncRead for Cut {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut")))
        }
    }
    Box::pin(tokio::io::AsyncReadExt::chain(std::io::Cursor::new(bytes), Cut))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `len` bytes that differ from one offset to the next, so a misplaced piece shows.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i / 251) as u8).collect()
}

/// The stored digest of the upload with this path, once finished.
pub async fn stored_sha256(app: &TestApp, path: &str) -> Option<String> {
    let id = id_of(path).to_owned();
    watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar::<_, Option<String>>("SELECT sha256 FROM uploads WHERE public_id = $1")
            .bind(&id)
            .fetch_one(pool)
            .await
            .unwrap()
    })
}
