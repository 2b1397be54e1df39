//! An upload deleted in one tab while another tab makes a share of it: whichever comes first
//! wins, and no share is ever left without its file. Once with the delete held at the store (the
//! interleaving that lost the file), then as a real race, many times over.

use std::time::Duration;

use watasu::{
    accounts::EmailAddress,
    i18n::Lang,
    services::{
        Parts, Services,
        mails::Delivery,
        sharing::{Handover, Source, UploadFile},
    },
    share::{Message, ShareTtl, create::CreateError},
    uploads::Owner,
};

use super::{Tus, files_dir, id_of, storage_key};
use crate::support::{
    Backend, Page, TestApp, count,
    wrapped_store::{Call, Gate, Wrapped},
};

const SENDER: &str = "two-tabs@example.test";
const ROUNDS: usize = 25;

/// The storage keys of every share's file.
async fn share_keys(app: &TestApp) -> Vec<String> {
    watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id")
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
    // The app's store, whose partial-file deletes wait at a gate: the test holds a termination
    // between its start and its bytes' removal.
    let store = Wrapped::new(app.state.store.clone(), Gate::new(Call::DeletePartial));
    let services = Services::new(Parts { store: store.clone(), ..app.state.services.parts().clone() });
    let email = EmailAddress::parse(SENDER).unwrap();
    let sender = services.accounts.active_by_email(&email).await.unwrap().unwrap();
    let id = id_of(&path).to_owned();

    let terminating = tokio::spawn({
        let (uploads, id, owner) = (services.uploads.clone(), id.clone(), Owner::Sender(sender.id));
        async move { uploads.terminate(owner, &id).await }
    });
    store.hook.wait_entered().await;
    // The other tab, while the first one's delete is under way.
    let upload = Handover {
        recipients: vec![EmailAddress::parse("client@example.test").unwrap()],
        files: vec![UploadFile { file_name: "report.txt", content_type: "text/plain", source: Source::Finished(&id) }],
        note: None,
        ttl: ShareTtl::parse(Duration::from_secs(86_400), Duration::from_secs(30 * 86_400)).unwrap(),
        message: Message::parse("").unwrap(),
        lang: Lang::En,
        notify_on_download: false,
        name_file_in_mail: true,
        allow_reply: false,
    };
    let made = services.sharing.create(&sender, upload, async || Ok(()), Delivery::Background).await;
    store.hook.open();
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
