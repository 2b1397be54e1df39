//! Resumable downloads over HTTP: the claim answers 303 to the file; only the claiming session
//! fetches it, during the delivery grace, whole or in one range; "download completed" (and the
//! sender's receipt) comes once the bytes went out without a gap.

use std::time::Duration;

use sha2::{Digest, Sha256};

use watasu::{
    maintenance::Trigger,
    services::handover::{Asked, Fetch, Refusal},
    session::Session,
};

use crate::{
    both_backends,
    support::{Backend, Browser, TestApp, TestShare, clock, count, event_kinds, eventually},
};

const SMALL: &[u8] = b"the file contents\n";

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// 32 MiB that differ byte to byte, so a misplaced range shows in the digest.
fn big_content() -> &'static [u8] {
    Box::leak((0..32usize << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into_boxed_slice())
}

async fn delivered_bytes(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT delivered_bytes FROM shares WHERE id = $1", share_id).await
}

async fn completed_rows(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND delivered_at IS NOT NULL", share_id).await
}

async fn kind_count(app: &TestApp, share_id: i64, kind: &str) -> usize {
    event_kinds(app, share_id).await.iter().filter(|k| *k == kind).count()
}

async fn receipts_queued(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM mail_outbox WHERE share_id = $1 AND kind = 'download_receipt'", share_id)
        .await
}

/// A granted browser that has claimed `share` (its POST answered 303), with its CSRF token.
async fn claimed(app: &TestApp, share: &TestShare) -> (Browser, String) {
    let (browser, csrf) = app.granted_browser(share).await;
    let claim = browser.claim(&share.token, &csrf).await;
    assert_eq!(claim.status(), 303);
    (browser, csrf)
}

async fn big_share(app: &TestApp, content: &'static [u8]) -> TestShare {
    let sender = app.create_sender("s@example.test", "S").await;
    app.fake_share().sender(sender).recipient("r@example.test").file("big.bin", content).create().await
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

async fn the_claim_answers_303_to_the_file_which_comes_whole_with_its_validators(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.granted_browser(&share).await;
    let claim = browser.claim(&share.token, &csrf).await;
    assert_eq!(claim.status(), 303);
    assert_eq!(header(&claim, "location"), format!("/s/{}/file", share.token));

    let file = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(file.status(), 200);
    assert_eq!(header(&file, "etag"), format!("\"{}\"", sha256(SMALL)));
    assert_eq!(header(&file, "accept-ranges"), "bytes");
    assert_eq!(header(&file, "content-length"), "18");
    assert_eq!(header(&file, "cache-control"), "no-store");
    assert!(header(&file, "content-disposition").starts_with("attachment; "));
    assert_eq!(file.bytes().await.unwrap().as_ref(), SMALL);
    // The event is recorded after the row's update, so once it is there both are.
    eventually(Duration::from_secs(10), "the completed download recorded", async || {
        kind_count(&app, share.id, "download_completed").await == 1
    })
    .await;
    assert_eq!(completed_rows(&app, share.id).await, 1);
    assert_eq!(event_kinds(&app, share.id).await, ["downloaded", "download_completed"]);
}

async fn a_download_cut_at_a_third_and_resumed_is_the_exact_file_and_completes_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let content = big_content();
    let share = big_share(&app, content).await;
    let (browser, _) = claimed(&app, &share).await;

    // About 30 % arrives, then the connection drops.
    let mut first = browser.fetch_file(&share.token, &[]).await;
    assert_eq!(first.status(), 200);
    let etag = header(&first, "etag");
    let mut received = Vec::new();
    while received.len() < content.len() * 3 / 10 {
        received.extend_from_slice(&first.chunk().await.unwrap().expect("more bytes"));
    }
    drop(first);
    eventually(Duration::from_secs(10), "the cut response's progress", async || {
        delivered_bytes(&app, share.id).await > 0
    })
    .await;
    let delivered = delivered_bytes(&app, share.id).await;
    assert!(delivered >= received.len() as i64, "counted {delivered} of the {} bytes received", received.len());
    assert!(delivered < content.len() as i64, "the dropped download was counted as whole");
    assert_eq!(completed_rows(&app, share.id).await, 0);
    assert_eq!(kind_count(&app, share.id, "download_completed").await, 0);
    assert_eq!(receipts_queued(&app, share.id).await, 0, "a receipt for an unfinished download");

    // The rest, as a browser resumes it.
    let range = format!("bytes={}-", received.len());
    let rest = browser.fetch_file(&share.token, &[("Range", &range), ("If-Range", &etag)]).await;
    assert_eq!(rest.status(), 206);
    let size = content.len();
    assert_eq!(header(&rest, "content-range"), format!("bytes {}-{}/{size}", received.len(), size - 1));
    assert_eq!(header(&rest, "content-length"), (size - received.len()).to_string());
    received.extend_from_slice(&rest.bytes().await.unwrap());
    assert_eq!(sha256(&received), sha256(content), "the reassembled file differs");

    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert!(mail.to[0] == "s@example.test", "{:?}", mail.to);
    let text = mail.text();
    let labels = |lang: watasu::i18n::Lang| {
        let t = lang.text();
        text.contains(t.mail.receipt_started) && text.contains(t.mail.receipt_completed)
    };
    assert!(labels(watasu::i18n::Lang::Ja) || labels(watasu::i18n::Lang::En), "{text}");
    assert_eq!(delivered_bytes(&app, share.id).await, size as i64);
    assert_eq!(completed_rows(&app, share.id).await, 1);
    assert_eq!(event_kinds(&app, share.id).await, ["downloaded", "download_completed"]);
    assert_eq!(receipts_queued(&app, share.id).await, 1);
}

async fn single_ranges_are_served_and_anything_else_gets_the_whole_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, _) = claimed(&app, &share).await;
    let etag = format!("\"{}\"", sha256(SMALL));

    // HEAD: the headers, no body, and nothing recorded.
    let events_before = event_kinds(&app, share.id).await;
    let head = browser.client.head(browser.url(&format!("/s/{}/file", share.token))).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!((header(&head, "etag"), header(&head, "accept-ranges")), (etag.clone(), "bytes".to_owned()));
    assert_eq!(header(&head, "content-length"), "18");
    assert!(head.bytes().await.unwrap().is_empty());

    // The last ten bytes: served, but not a prefix, so nothing is delivered yet.
    let tail = browser.fetch_file(&share.token, &[("Range", "bytes=-10")]).await;
    assert_eq!((tail.status().as_u16(), header(&tail, "content-range")), (206, "bytes 8-17/18".to_owned()));
    assert_eq!(tail.bytes().await.unwrap().as_ref(), &SMALL[8..]);
    let first = browser.fetch_file(&share.token, &[("Range", "bytes=0-0")]).await;
    assert_eq!((first.status().as_u16(), header(&first, "content-range")), (206, "bytes 0-0/18".to_owned()));
    assert_eq!(header(&first, "content-length"), "1");
    assert_eq!(first.bytes().await.unwrap().as_ref(), b"t");
    eventually(Duration::from_secs(10), "the first byte counted", async || delivered_bytes(&app, share.id).await == 1)
        .await;
    assert_eq!(event_kinds(&app, share.id).await, events_before, "HEAD or a range changed the timeline");

    let past = browser.fetch_file(&share.token, &[("Range", "bytes=18-")]).await;
    assert_eq!((past.status().as_u16(), header(&past, "content-range")), (416, "bytes */18".to_owned()));
    for headers in [
        &[("Range", "bytes=5-"), ("If-Range", "\"another file\"")][..],
        &[("Range", "bytes=5-"), ("If-Range", "Tue, 01 Dec 2026 12:00:00 GMT")],
        &[("Range", "bytes=0-1,4-5")],
    ] {
        let whole = browser.fetch_file(&share.token, headers).await;
        assert_eq!(whole.status(), 200, "{headers:?}");
        assert_eq!(header(&whole, "content-range"), "", "{headers:?}");
        assert_eq!(whole.bytes().await.unwrap().as_ref(), SMALL, "{headers:?}");
    }
    eventually(Duration::from_secs(10), "the whole file counted", async || {
        kind_count(&app, share.id, "download_completed").await == 1
    })
    .await;
    assert_eq!(completed_rows(&app, share.id).await, 1);
    assert_eq!(delivered_bytes(&app, share.id).await, 18);
}

async fn a_head_request_changes_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, _) = claimed(&app, &share).await;
    // A HEAD has no body to count, so nothing runs after it: the rows are final once it answers.
    let share_rows = async || {
        let tables = crate::support::tables_as_text(app.db()).await;
        tables.into_iter().filter(|(t, _)| t == "shares" || t == "share_events").collect::<Vec<_>>()
    };
    let before = share_rows().await;
    for _ in 0..3 {
        let head = browser.client.head(browser.url(&format!("/s/{}/file", share.token))).send().await.unwrap();
        assert_eq!(head.status(), 200);
        assert_eq!(header(&head, "content-length"), "18");
        assert!(head.bytes().await.unwrap().is_empty());
    }
    assert_eq!(share_rows().await, before);
    assert_eq!(delivered_bytes(&app, share.id).await, 0);
    assert_eq!(event_kinds(&app, share.id).await, ["downloaded"]);
}

async fn only_the_claiming_session_gets_the_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (claimer, csrf) = claimed(&app, &share).await;
    let (other, other_csrf) = app.granted_browser(&share).await;
    assert_eq!(other.fetch_file(&share.token, &[]).await.status(), 410);
    assert_eq!(app.browser().fetch_file(&share.token, &[]).await.status(), 410, "a cookieless fetch");
    assert_eq!(other.claim(&share.token, &other_csrf).await.status(), 410);

    // The claimer asking again: the same 303, no second claim.
    let consumed_at = "SELECT count(*) FROM shares WHERE id = $1 AND consumed_at IS NOT NULL";
    let again = claimer.claim(&share.token, &csrf).await;
    assert_eq!((again.status().as_u16(), header(&again, "location")), (303, format!("/s/{}/file", share.token)));
    assert_eq!(kind_count(&app, share.id, "downloaded").await, 1);
    assert_eq!(count(app.db(), consumed_at, share.id).await, 1);
    let page = claimer.fetch_file(&share.token, &[]).await;
    assert_eq!(page.status(), 200);
    assert_eq!(page.bytes().await.unwrap().as_ref(), SMALL);

    // After the grace, not even the claimer.
    app.consumed_ago(share.id, 16 * 60).await;
    let late = crate::support::Page::read(claimer.fetch_file(&share.token, &[]).await).await;
    assert_eq!(late.status, 410);
    assert_eq!(late.texts("h1"), [watasu::i18n::Lang::Ja.text().recipient.downloaded_title.replace('|', "")]);
    assert_eq!(claimer.claim(&share.token, &csrf).await.status(), 410);
}

async fn a_purged_share_is_gone_for_the_claimer_too(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let share = app.create_share().await;
    let (claimer, _) = claimed(&app, &share).await;
    app.consumed_ago(share.id, 16 * 60).await;
    let report = app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await.unwrap().unwrap();
    assert_eq!(report.purged, 1, "{report:?}");
    // Back inside the grace by the clock: only the purge refuses it now.
    app.consumed_ago(share.id, 0).await;
    assert_eq!(claimer.fetch_file(&share.token, &[]).await.status(), 410);
}

async fn a_fetch_before_the_claim_goes_to_the_landing_page_and_claims_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (granted, _) = app.granted_browser(&share).await;
    for browser in [&granted, &app.browser()] {
        let answer = browser.fetch_file(&share.token, &[]).await;
        assert_eq!((answer.status().as_u16(), header(&answer, "location")), (303, format!("/s/{}", share.token)));
    }
    let head = granted.client.head(granted.url(&format!("/s/{}/file", share.token))).send().await.unwrap();
    assert_eq!(head.status(), 303);
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND status = 'active'", share.id).await, 1);
    assert!(event_kinds(&app, share.id).await.is_empty());
    let page = granted.get(&format!("/s/{}", share.token)).await;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("download"));
}

async fn a_claim_whose_get_comes_after_the_grace_gets_its_file_and_the_grace_runs_from_that_first_byte(
    backend: Backend,
) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let share = app.create_share().await;
    let (claimer, _) = claimed(&app, &share).await;
    let gc_pass = async || app.state.services.gc.try_pass(Trigger::Cli).await.unwrap().unwrap().purged;

    // The GET comes 16 minutes after the claim (an overloaded server, a laptop put to sleep):
    // no byte went out, so the file is kept and served.
    app.set_ago("shares", &["consumed_at"], 16 * 60, &clock::id(share.id)).await;
    assert_eq!(gc_pass().await, 0, "the file was collected before a byte went out");
    let late = claimer.fetch_file(&share.token, &[]).await;
    assert_eq!(late.status(), 200, "the claimer was refused before receiving a byte");
    assert_eq!(late.bytes().await.unwrap().as_ref(), SMALL);
    eventually(Duration::from_secs(10), "the completed download recorded", async || {
        kind_count(&app, share.id, "download_completed").await == 1
    })
    .await;
    let started = "SELECT count(*) FROM shares WHERE id = $1 AND delivery_started_at IS NOT NULL";
    assert_eq!(count(app.db(), started, share.id).await, 1);
    assert_eq!(gc_pass().await, 0, "the grace did not run from the first byte");

    // A grace after that first byte, the file goes.
    app.set_ago("shares", &["delivery_started_at"], 16 * 60, &clock::id(share.id)).await;
    assert_eq!(gc_pass().await, 1);
    assert_eq!(claimer.fetch_file(&share.token, &[]).await.status(), 410);
}

async fn a_request_with_the_claiming_sessions_id_but_another_cookie_gets_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    claimed(&app, &share).await;
    let session_id = count(app.db(), "SELECT claimed_session_id FROM shares WHERE id = $1", share.id).await;
    let id_hash: String = watasu::on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT id_hash FROM sessions WHERE id = $1").bind(session_id).fetch_one(pool).await.unwrap()
    });
    let session = |id_hash: String| Session {
        id: session_id,
        id_hash,
        user_id: None,
        csrf_secret: String::new(),
        is_admin: false,
        time_zone: None,
    };
    let handover = &app.state.services.handover;
    // The claimer's own cookie: the file.
    let own = handover.fetch(&share.token, Some(&session(id_hash.clone()))).await;
    assert!(matches!(own, Ok(Fetch::Claimed(_))), "{own:?}");
    // The same row id on any other cookie (a request in flight from before a regeneration, a
    // stolen claim): nothing, not even when it was downloaded.
    let other = session(watasu::secret::sha256_hex("another cookie"));
    let refused = handover.fetch(&share.token, Some(&other)).await;
    assert!(matches!(refused, Err(Refusal::AlreadyDownloaded)), "{refused:?}");
    assert!(handover.claimed_here(&share.token, Some(&other)).await.unwrap().is_none());
    assert!(handover.claimed_here(&share.token, Some(&session(id_hash))).await.unwrap().is_some());
    assert!(
        handover.download(&share.token, Some(&other), Asked::All).await.is_err(),
        "the claim was honoured for another cookie"
    );
}

both_backends!(
    the_claim_answers_303_to_the_file_which_comes_whole_with_its_validators,
    a_download_cut_at_a_third_and_resumed_is_the_exact_file_and_completes_once,
    single_ranges_are_served_and_anything_else_gets_the_whole_file,
    a_head_request_changes_nothing,
    only_the_claiming_session_gets_the_file,
    a_purged_share_is_gone_for_the_claimer_too,
    a_fetch_before_the_claim_goes_to_the_landing_page_and_claims_nothing,
    a_claim_whose_get_comes_after_the_grace_gets_its_file_and_the_grace_runs_from_that_first_byte,
    a_request_with_the_claiming_sessions_id_but_another_cookie_gets_nothing
);
