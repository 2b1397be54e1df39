//! The bucket down for a while: a new share, a download and a GC pass meet it with a friendly 503 or a
//! failure that backs off, lose nothing, and succeed once the store is back.

use std::time::Duration;

use watasu::{i18n::Lang, maintenance::Trigger};

use crate::support::{Backend, TestApp, event_kinds, eventually, s3::S3Server};

/// An app whose files live in a bucket of its own `s3s-fs`, which the test stops and starts.
async fn app_on_own_bucket(backend: crate::support::Backend) -> (TestApp, S3Server, String) {
    let s3 = S3Server::start();
    let bucket = s3.create_bucket();
    let storage = s3.storage_settings(&bucket);
    let app = TestApp::spawn_settled(backend, |s| {
        s.storage = storage;
        s.access_time_gc = false;
        s.purge_retry_base = Duration::from_secs(1);
    })
    .await;
    (app, s3, bucket)
}

/// Posts the new-share form with a small file; answers the status and the page.
async fn post_new_share(browser: &crate::support::Browser, csrf: &str) -> (u16, String) {
    let page = browser
        .post_new_share(Some(csrf), "recipient@example.test", "report.txt", b"the file contents\n".to_vec())
        .await;
    (page.status.as_u16(), page.body)
}

fn objects_in(s3: &S3Server, bucket: &str) -> usize {
    std::fs::read_dir(s3.bucket_dir(bucket).join("files")).map(|dir| dir.flatten().count()).unwrap_or(0)
}

async fn a_new_share_sent_while_the_store_is_down_is_a_friendly_503_and_goes_through_once_it_is_back(backend: Backend) {
    let (app, s3, bucket) = app_on_own_bucket(backend).await;
    let sender = app.signed_in_sender("sato@example.test").await;
    let csrf = sender.get("/shares/new").await.csrf_token();

    s3.stop();
    for lang in [Lang::Ja, Lang::En] {
        sender.set_cookie("lang", lang.code());
        let (status, body) = post_new_share(&sender, &csrf).await;
        let text = &lang.text().errors.unavailable;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains(text.title) && body.contains(text.body), "{lang:?}: {body}");
    }
    assert_eq!(crate::support::count(app.db(), "SELECT COUNT(*) FROM shares WHERE id > $1", 0).await, 0);
    s3.restart();
    let (status, body) = post_new_share(&sender, &csrf).await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(objects_in(&s3, &bucket), 1);
}

async fn a_download_while_the_store_is_down_is_a_friendly_503_and_works_once_it_is_back(backend: Backend) {
    let (app, s3, _bucket) = app_on_own_bucket(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.verified_browser(&share).await;

    s3.stop();
    for lang in [Lang::Ja, Lang::En] {
        browser.set_cookie("lang", lang.code());
        let refused = browser.claim(&share.token, &csrf).await;
        assert_eq!(refused.status(), 503);
        let body = refused.text().await.unwrap();
        let text = &lang.text().errors.unavailable;
        assert!(body.contains(text.title) && body.contains(text.body), "{lang:?}: {body}");
    }
    // The failed read used up nothing: no claim, and the link still offers its download.
    assert!(!event_kinds(&app, share.id).await.contains(&"downloaded".to_owned()));
    s3.restart();
    let page = browser.open_link(&share.token).await;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("download"), "{}", page.body);

    let file = browser.download(&share.token, &csrf).await;
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"the file contents\n");
    assert_eq!(event_kinds(&app, share.id).await.iter().filter(|k| *k == "downloaded").count(), 1);
    let (other, other_csrf) = app.granted_browser(&share).await;
    assert_eq!(other.download(&share.token, &other_csrf).await.status(), 410);
}

async fn a_gc_pass_while_the_store_is_down_backs_off_and_removes_the_object_once_it_is_back(backend: Backend) {
    let (app, s3, bucket) = app_on_own_bucket(backend).await;
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    assert_eq!(objects_in(&s3, &bucket), 1);

    s3.stop();
    let report = app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!((report.purged, report.failed), (0, 1), "{report:?}");
    s3.restart();
    assert_eq!(objects_in(&s3, &bucket), 1, "the object went while the store was down");
    // The key went all the same: the bytes left behind cannot be read, and the timeline says so
    // with the bytes' deletion still to come.
    assert_eq!(event_kinds(&app, share.id).await.iter().filter(|k| *k == "key_destroyed").count(), 1);
    assert!(!event_kinds(&app, share.id).await.contains(&"purged".to_owned()));
    let keys_left = "SELECT count(*) FROM files f JOIN shares s ON s.handover_id = f.handover_id
                      WHERE s.id = $1 AND (f.wrapped_key IS NOT NULL OR f.key_destroyed_at IS NULL)";
    assert_eq!(crate::support::count(app.db(), keys_left, share.id).await, 0);

    eventually(Duration::from_secs(30), "the purge after the back-off", async || {
        let _ = app.state.services.gc.gc().collect(10, Trigger::Cli).await;
        event_kinds(&app, share.id).await.contains(&"purged".to_owned())
    })
    .await;
    assert_eq!(objects_in(&s3, &bucket), 0);
    let kinds = event_kinds(&app, share.id).await;
    // Each retry of the collection recorded nothing again.
    for kind in ["expired", "key_destroyed", "purged"] {
        assert_eq!(kinds.iter().filter(|k| *k == kind).count(), 1, "{kind}: {kinds:?}");
    }
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap();
    assert!(at("key_destroyed") < at("purged"), "the key before the bytes: {kinds:?}");
}

crate::both_backends!(
    a_new_share_sent_while_the_store_is_down_is_a_friendly_503_and_goes_through_once_it_is_back,
    a_download_while_the_store_is_down_is_a_friendly_503_and_works_once_it_is_back,
    a_gc_pass_while_the_store_is_down_backs_off_and_removes_the_object_once_it_is_back
);
