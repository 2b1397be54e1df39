//! One-time downloads over HTTP: the claim, the 410 page, GET never consuming, and the garbage
//! collector running after responses and on its timer.

use std::time::{Duration, Instant};
use watasu::on_db;

use crate::{
    both_backends,
    support::{Backend, TestApp, TestShare, count, eventually, execute},
};
use watasu::db::Sql;

async fn status_of(app: &TestApp, share_id: i64) -> String {
    on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT status FROM shares WHERE id = $1").bind(share_id).fetch_one(pool).await.unwrap()
    })
}

fn stored_files(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.path().join("files")).map(|d| d.count()).unwrap_or(0)
}

async fn fifty_concurrent_downloads_give_exactly_one_file_and_the_rest_410(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("s@example.test", "S").await;
    let content: &'static [u8] = Box::leak(vec![7u8; 1 << 20].into_boxed_slice());
    let share = app.fake_share().sender(sender).recipient("r@example.test").file("one.bin", content).create().await;
    let mut browsers = Vec::new();
    for _ in 0..50 {
        browsers.push(app.granted_browser(&share).await);
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for (browser, csrf) in browsers {
        let (barrier, share) = (barrier.clone(), TestShare { id: share.id, token: share.token.clone(), sender_id: 0 });
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let response = browser.download(&share.token, &csrf).await;
            let status = response.status().as_u16();
            (status, response.bytes().await.unwrap().len())
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let ok: Vec<_> = outcomes.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(ok.len(), 1, "{outcomes:?}");
    assert_eq!(ok[0].1, content.len(), "the one download was incomplete");
    assert!(outcomes.iter().all(|(s, _)| *s == 200 || *s == 410), "{outcomes:?}");
    assert_eq!(status_of(&app, share.id).await, "consumed");
    assert_eq!(stored_files(&app), 1, "the file must stay during the delivery grace");
}

async fn the_sender_is_mailed_once_the_file_was_downloaded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    assert!(app.smtp.messages().is_empty());
    let response = browser.download(&share.token, &csrf).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert!(mail.to[0].starts_with("sender-"), "{:?}", mail.to);
    assert!(mail.text().contains("report.txt") && mail.text().contains("recipient@example.test"));

    // Switched off for a share: no receipt.
    execute(app.db(), Sql::same("UPDATE shares SET notify_on_download = false WHERE id = $1"), share.id).await;
    let quiet = app.create_share().await;
    execute(app.db(), Sql::same("UPDATE shares SET notify_on_download = false WHERE id = $1"), quiet.id).await;
    let (browser, csrf) = app.granted_browser(&quiet).await;
    let response = browser.download(&quiet.token, &csrf).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    // A download after it, with receipts on: once its receipt has arrived, the quiet one's
    // would have too.
    let marker = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&marker).await;
    let response = browser.download(&marker.token, &csrf).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    assert!(mails[1].text().contains("report.txt"), "the second mail is the marker's receipt");
    assert_eq!(count(app.db(), "SELECT count(*) FROM mail_outbox WHERE share_id = $1", quiet.id).await, 0);
    assert_eq!(app.smtp.messages().len(), 2, "a receipt went out although it was switched off");
}

async fn a_file_missing_from_storage_does_not_use_up_the_download(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    let dir = app.data_dir.path().join("files");
    let stored: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    std::fs::rename(&stored[0], dir.join("moved-away")).unwrap();
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 410);
    assert_eq!(status_of(&app, share.id).await, "active", "a failed read consumed the share");
    std::fs::rename(dir.join("moved-away"), &stored[0]).unwrap();
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 200);
}

async fn a_second_download_gets_the_friendly_410_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 200);
    // Another granted session is the second download (the claimer itself may resume during
    // the grace: resumed_downloads).
    let (second, second_csrf) = app.granted_browser(&share).await;
    let again = second.download(&share.token, &second_csrf).await;
    assert_eq!(again.status(), 410);
    let body = again.text().await.unwrap();
    assert!(body.contains("すでにダウンロードされています"), "{body}");
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.status, 410, "the link now says it was downloaded");
    let unknown = browser.get(&format!("/s/{}", "0".repeat(64))).await;
    assert_eq!(unknown.status, 404);
    assert_ne!(landing.texts("h1"), unknown.texts("h1"), "410 and 404 must say different things");
}

async fn get_and_head_on_every_share_url_never_consume(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, _) = app.granted_browser(&share).await;
    for path in ["", "/download", "/email", "/code", "/code/new"] {
        let url = browser.url(&format!("/s/{}{path}", share.token));
        for agent in ["Slackbot-LinkExpanding 1.0", "Microsoft Office/16.0", "Mozilla/5.0"] {
            browser.client.get(&url).header("User-Agent", agent).send().await.unwrap();
            browser.client.head(&url).header("User-Agent", agent).send().await.unwrap();
        }
    }
    assert_eq!(status_of(&app, share.id).await, "active");
    let page = browser.get(&format!("/s/{}", share.token)).await;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("download"));
}

async fn a_dropped_download_leaves_the_share_consumed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("s@example.test", "S").await;
    let content: &'static [u8] = Box::leak(vec![1u8; 32 << 20].into_boxed_slice());
    let share = app.fake_share().sender(sender).recipient("r@example.test").file("big.bin", content).create().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    let mut response = browser.download(&share.token, &csrf).await;
    assert_eq!(response.status(), 200);
    let first = response.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(response);
    assert_eq!(status_of(&app, share.id).await, "consumed");
    let (other, other_csrf) = app.granted_browser(&share).await;
    assert_eq!(other.download(&share.token, &other_csrf).await.status(), 410);
    // The claimer asking again is sent to the file, and is no second claim.
    assert_eq!(browser.claim(&share.token, &csrf).await.status(), 303);
    let claims =
        count(app.db(), "SELECT count(*) FROM share_events WHERE share_id = $1 AND kind = 'downloaded'", share.id)
            .await;
    assert_eq!(claims, 1);
}

async fn a_collectable_share_disappears_right_after_an_unrelated_page_view(backend: Backend) {
    // The timer's next tick is a day away: only the after-response pass can collect it.
    let app = TestApp::spawn_settled(backend, |_| {}).await;
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    assert_eq!(stored_files(&app), 1);
    assert_eq!(app.browser().get("/").await.status, 200);
    let purged_events = "SELECT count(*) FROM share_events WHERE share_id = $1 AND kind = 'purged'";
    // The event is recorded right after the row is marked: wait for both.
    eventually(Duration::from_secs(1), "the after-response GC pass", async || {
        status_of(&app, share.id).await == "purged" && count(app.db(), purged_events, share.id).await == 1
    })
    .await;
    assert_eq!(stored_files(&app), 0);
}

async fn a_gc_failure_never_turns_a_page_into_an_error(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |_| {}).await;
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    // A directory where the file should be: the delete fails, even as root.
    let dir = app.data_dir.path().join("files");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keep"), b"x").unwrap();
    }
    for _ in 0..5 {
        let page = app.browser().get("/").await;
        assert_eq!(page.status, 200);
    }
    eventually(Duration::from_secs(2), "the failed delete to be counted", async || {
        count(app.db(), "SELECT CAST(purge_attempts AS BIGINT) FROM shares WHERE id = $1", share.id).await >= 1
    })
    .await;
    assert_eq!(status_of(&app, share.id).await, "active", "a share whose file is still there was marked purged");
}

async fn the_timer_collects_with_no_traffic_at_all(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.gc_interval = Duration::from_secs(1);
        s.access_time_gc = false;
    })
    .await;
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    eventually(Duration::from_secs(5), "the timer GC pass", async || status_of(&app, share.id).await == "purged").await;
    assert_eq!(stored_files(&app), 0);
}

async fn a_revoked_share_is_not_available_and_is_collected(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |_| {}).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    assert!(app.state.lifecycle.revoke(share.id).await.unwrap());
    assert!(!app.state.lifecycle.revoke(share.id).await.unwrap(), "revoked twice");
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 404);
    assert_eq!(browser.get(&format!("/s/{}", share.token)).await.status, 404);
    eventually(Duration::from_secs(2), "the revoked share's collection", async || {
        status_of(&app, share.id).await == "purged"
    })
    .await;
    assert_eq!(stored_files(&app), 0);
}

async fn the_file_stays_through_the_grace_and_goes_after_it(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |_| {}).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 200);
    // A whole pass runs after the download (ours, once the one the download asked for is
    // done): it must leave the file.
    let deadline = Instant::now() + Duration::from_secs(10);
    let report = loop {
        if let Some(report) = app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await {
            break report.unwrap();
        }
        assert!(Instant::now() < deadline, "no pass could run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(report.purged, 0, "{report:?}");
    assert_eq!(stored_files(&app), 1, "collected during the delivery grace");
    app.consumed_ago(share.id, 16 * 60).await;
    app.browser().get("/").await;
    eventually(Duration::from_secs(1), "collection after the grace", async || {
        status_of(&app, share.id).await == "purged"
    })
    .await;
    assert_eq!(stored_files(&app), 0, "purged before its file was gone");
}

both_backends!(
    fifty_concurrent_downloads_give_exactly_one_file_and_the_rest_410,
    the_sender_is_mailed_once_the_file_was_downloaded,
    a_file_missing_from_storage_does_not_use_up_the_download,
    a_second_download_gets_the_friendly_410_page,
    get_and_head_on_every_share_url_never_consume,
    a_dropped_download_leaves_the_share_consumed,
    a_collectable_share_disappears_right_after_an_unrelated_page_view,
    a_gc_failure_never_turns_a_page_into_an_error,
    the_timer_collects_with_no_traffic_at_all,
    a_revoked_share_is_not_available_and_is_collected,
    the_file_stays_through_the_grace_and_goes_after_it
);
