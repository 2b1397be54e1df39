//! Files that arrive through tus are stored sealed too (issue 37): the pieces are joined into the
//! stored file through the sealing, so once complete no stored byte (stored file, piece, temp
//! file) holds the plaintext, and the file downloads as sent, whole and in ranges, with the
//! plaintext's digest.

use crate::{
    sealed_files::{MARKER, Store, app_on, content, on_both_backends_and_stores, stored_files},
    support::{Backend, Page, TestApp, TestShare},
    uploads::{Tus, id_of, sha256_hex},
};

/// Posts the new-share form naming the upload, as the page's script does; answers the share.
pub(crate) async fn share_upload(app: &TestApp, tus: &Tus, upload_path: &str) -> TestShare {
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", tus.csrf.clone())
        .text("recipient", "client@example.test")
        .text("expires_in", "1d")
        .text("message", "")
        .text("mail_lang", "en")
        .text("upload", id_of(upload_path).to_owned());
    let request = tus.browser.client.post(tus.browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    let page = Page::read(request.multipart(form).send().await.unwrap()).await;
    assert_eq!(page.status, 303, "{}", page.body);
    let page = page.follow_created(&tus.browser.client, &tus.browser.base).await;
    let link = page.attr("#share-link", "value").unwrap();
    let token = link.rsplit_once("/s/").unwrap().1.to_owned();
    let (id, sender_id): (i64, i64) = watasu::on_db!(app.db(), |pool| {
        sqlx::query_as("SELECT id, sender_id FROM shares ORDER BY id DESC LIMIT 1").fetch_one(pool).await.unwrap()
    });
    TestShare { id, token, sender_id }
}

/// Sends `content` in three PATCHes (three pieces in the object store); answers the upload's path.
pub(crate) async fn upload_in_pieces(tus: &Tus, content: &[u8]) -> String {
    let path = tus.create(content.len() as u64).await;
    let third = content.len() / 3;
    for (from, to) in [(0, third), (third, 2 * third), (2 * third, content.len())] {
        let page = tus.patch(&path, from as u64, &content[from..to]).await;
        assert_eq!(page.status, 204, "{}", page.body);
    }
    path
}

async fn a_completed_tus_upload_is_stored_sealed_and_downloads_as_sent(backend: Backend, store: Store) {
    let (app, dir) = app_on(backend, store, true).await;
    let content = content();
    let tus = Tus::sender(&app, "tus-sealed@example.test").await;
    let path = upload_in_pieces(&tus, content).await;

    let stored = stored_files(&dir);
    let names: Vec<_> = stored.iter().map(|(path, _)| path.display().to_string()).collect();
    assert_eq!(stored.len(), 1, "the pieces and temp files are gone once joined: {names:?}");
    for (path, bytes) in &stored {
        assert!(!bytes.windows(MARKER.len()).any(|w| w == MARKER), "the plaintext marker is in {}", path.display());
    }
    let (sealing, digest, wrapped): (String, String, Option<Vec<u8>>) = watasu::on_db!(app.db(), |pool| {
        sqlx::query_as("SELECT sealing, sha256, wrapped_key FROM uploads WHERE public_id = $1")
            .bind(id_of(&path))
            .fetch_one(pool)
            .await
            .unwrap()
    });
    assert_eq!((sealing.as_str(), digest.as_str()), ("sealed-v1", sha256_hex(content).as_str()));
    assert!(wrapped.is_some());

    let share = share_upload(&app, &tus, &path).await;
    let (sealing, digest, size, wrapped): (String, String, i64, Option<Vec<u8>>) = watasu::on_db!(app.db(), |pool| {
        sqlx::query_as(
            "SELECT f.sealing, f.sha256, f.size_bytes, f.wrapped_key FROM shares s
               JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        )
        .bind(share.id)
        .fetch_one(pool)
        .await
        .unwrap()
    });
    assert_eq!((sealing.as_str(), digest, size), ("sealed-v1", sha256_hex(content), content.len() as i64));
    assert!(wrapped.is_some(), "the files row holds the upload's wrapped key");

    let (browser, csrf) = app.granted_browser(&share).await;
    assert_eq!(browser.claim(&share.token, &csrf).await.status(), 303);
    let whole = browser.fetch_file(&share.token, &[]).await.bytes().await.unwrap();
    assert_eq!(sha256_hex(&whole), sha256_hex(content));
    let range = browser.fetch_file(&share.token, &[("Range", "bytes=70000-140000")]).await;
    assert_eq!(range.status(), 206);
    assert_eq!(range.bytes().await.unwrap().as_ref(), &content[70000..=140000]);
}

on_both_backends_and_stores!(a_completed_tus_upload_is_stored_sealed_and_downloads_as_sent);
