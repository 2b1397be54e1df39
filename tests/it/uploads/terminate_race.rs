//! An upload deleted in one tab while another tab makes a share of it: whichever comes first
//! wins, and no share is ever left without its file. Once with the delete held at the store (the
//! interleaving that lost the file), then as a real race, many times over.

use std::{pin::Pin, sync::Arc, time::Duration};

use tokio::{io::AsyncRead, sync::Semaphore};
use watasu::{
    accounts::EmailAddress,
    i18n::Lang,
    services::{
        Parts, Services,
        mails::Delivery,
        sharing::{Source, Upload},
    },
    share::{Message, ShareTtl, create::CreateError},
    storage::{Appended, Deleted, FileStore, Leftover, OpenedFile, ResumableStore, StoreError, StoredFile, SweptStore},
};

use super::{Tus, id_of};
use crate::support::{Backend, Page, TestApp, count};

const SENDER: &str = "two-tabs@example.test";
const ROUNDS: usize = 25;

/// The app's store, whose partial-file deletes wait at a gate: a test holds a termination
/// between its start and its bytes' removal.
struct GatedDeletes {
    inner: Arc<dyn SweptStore>,
    entered: Semaphore,
    gate: Semaphore,
}

#[async_trait::async_trait]
impl FileStore for GatedDeletes {
    async fn put<'a>(&self, content: Pin<Box<dyn AsyncRead + Send + 'a>>, max: u64) -> Result<StoredFile, StoreError> {
        self.inner.put(content, max).await
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        self.inner.open(key).await
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        self.inner.open_range(key, start, len).await
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        self.inner.delete(key).await
    }
}

#[async_trait::async_trait]
impl ResumableStore for GatedDeletes {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.inner.create_partial(key).await
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Pin<Box<dyn AsyncRead + Send + 'a>>,
        max: u64,
    ) -> Result<Appended, StoreError> {
        self.inner.append_partial(key, offset, content, max).await
    }

    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError> {
        self.inner.complete_partial(key, pieces).await
    }

    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError> {
        self.inner.discard_piece(key, piece).await
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        self.entered.add_permits(1);
        self.gate.acquire().await.unwrap().forget();
        self.inner.delete_partial(key).await
    }
}

#[async_trait::async_trait]
impl SweptStore for GatedDeletes {
    fn leftovers(&self) -> futures_util::stream::BoxStream<'_, Result<Leftover, StoreError>> {
        self.inner.leftovers()
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        self.inner.remove_leftover(leftover).await
    }
}

fn files_dir(app: &TestApp) -> std::path::PathBuf {
    app.data_dir.path().join("files")
}

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

/// The storage keys of every share's file.
async fn share_keys(app: &TestApp) -> Vec<String> {
    watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT f.storage_key FROM shares s JOIN files f ON f.id = s.file_id")
            .fetch_all(pool)
            .await
            .unwrap()
    })
}

/// Posts the new-share form naming the upload, as the page's JS does; the answer as it came.
async fn share_upload(tus: &Tus, upload_path: &str) -> Page {
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", tus.csrf.clone())
        .text("recipient", "client@example.test")
        .text("expires_in", "1d")
        .text("upload", id_of(upload_path).to_owned());
    let request = tus.browser.client.post(tus.browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.multipart(form).send().await.unwrap()).await
}

async fn a_share_made_while_its_upload_is_being_deleted_is_refused_and_the_file_goes(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    let tus = Tus::sender(&app, SENDER).await;
    let path = tus.upload(b"a file deleted in one tab, shared in the other").await;
    let key = storage_key(&app, &path).await;
    let store =
        Arc::new(GatedDeletes { inner: app.state.store.clone(), entered: Semaphore::new(0), gate: Semaphore::new(0) });
    let services = Services::new(Parts { store: store.clone(), ..app.state.services.parts().clone() });
    let email = EmailAddress::parse(SENDER).unwrap();
    let sender = services.accounts.active_by_email(&email).await.unwrap().unwrap();
    let id = id_of(&path).to_owned();

    let terminating = tokio::spawn({
        let (uploads, id, owner) = (services.uploads.clone(), id.clone(), sender.id);
        async move { uploads.terminate(owner, &id).await }
    });
    tokio::time::timeout(Duration::from_secs(30), store.entered.acquire()).await.unwrap().unwrap().forget();
    // The other tab, while the first one's delete is under way.
    let upload = Upload {
        recipient: EmailAddress::parse("client@example.test").unwrap(),
        file_name: "report.txt",
        content_type: "text/plain",
        source: Source::Finished(&id),
        ttl: ShareTtl::parse(Duration::from_secs(86_400), Duration::from_secs(30 * 86_400)).unwrap(),
        message: Message::parse("").unwrap(),
        lang: Lang::En,
        notify_on_download: false,
        name_file_in_mail: true,
    };
    let made = services.sharing.create(&sender, upload, async || Ok(()), Delivery::Background).await;
    store.gate.add_permits(1_000);
    terminating.await.unwrap().unwrap();

    assert!(matches!(made, Err(CreateError::UploadUnavailable)), "a share was made of a file being deleted: {made:?}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE $1 = $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM uploads WHERE $1 = $1", 0).await, 0);
    assert!(!files_dir(&app).join(&key).exists(), "the deleted upload's file is left");
}

async fn an_upload_deleted_in_one_tab_while_another_shares_it_never_leaves_a_share_without_its_file(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    let tus = Tus::sender(&app, SENDER).await;
    let mut keys = Vec::new();
    for round in 0..ROUNDS {
        let path = tus.upload(format!("round {round}").as_bytes()).await;
        keys.push(storage_key(&app, &path).await);

        let (deleted, shared) = tokio::join!(tus.delete(&path), share_upload(&tus, &path));

        // Exactly one of the two tabs wins; the other is told the upload is gone.
        let became_share = shared.status == 303;
        assert!(became_share || shared.status == 400, "round {round}: {}", shared.status);
        assert_eq!(deleted.status, if became_share { 404 } else { 204 }, "round {round}");
    }

    let shared = share_keys(&app).await;
    for key in &keys {
        let on_disk = files_dir(&app).join(key).exists();
        assert_eq!(on_disk, shared.contains(key), "a share without its file, or a deleted upload's file left");
    }
}

crate::both_backends!(
    a_share_made_while_its_upload_is_being_deleted_is_refused_and_the_file_goes,
    an_upload_deleted_in_one_tab_while_another_shares_it_never_leaves_a_share_without_its_file
);
