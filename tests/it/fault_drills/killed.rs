//! The real `watasu serve` killed with SIGKILL (no shutdown, no cleanup) in the middle of a
//! download and in the middle of an upload, then started again on the same data folder and
//! database.

use std::{path::Path, time::Duration};

use bytes::Bytes;

use super::{
    ChannelBody, DbState, db_state, event_kinds, eventually, files_in, is_temp, share_status, upload_body, upload_head,
    upload_request,
};
use crate::support::clock;
use crate::{
    both_backends,
    support::{
        Backend, Browser, SmtpSink,
        installation::{Installation, kill_9},
    },
};

const SENDER: &str = "drill-sender@example.test";
const RECIPIENT: &str = "drill-recipient@example.test";
const BIG: usize = 32 << 20;

/// `watasu share create` of `file` from SENDER to RECIPIENT; returns the link's token.
fn create_share(inst: &Installation, file: &Path) -> String {
    let stdout = inst.run(&["share", "create", "--from", SENDER, "--to", RECIPIENT, "--file", file.to_str().unwrap()]);
    let url = stdout.trim_end().lines().last().unwrap();
    url.rsplit_once("/s/").unwrap_or_else(|| panic!("no share URL in {stdout:?}")).1.to_owned()
}

/// The id of the share created in `position`.
async fn share_id(inst: &Installation, position: usize) -> i64 {
    let shares = super::lines(&inst.db, "SELECT CAST(id AS TEXT) FROM shares ORDER BY id").await;
    shares[position].parse().unwrap()
}

/// A browser that proved the recipient's address with the mailed code; returns it with the CSRF
/// token of its download page.
async fn verified_browser(smtp: &SmtpSink, base: &str, token: &str) -> (Browser, String) {
    let browser = Browser::new(base);
    let before = smtp.messages().len();
    let code_step = browser.ask_for_code(token, RECIPIENT).await;
    assert_eq!(code_step.status, 200, "{}", code_step.body);
    let code = smtp.code_for_after(RECIPIENT, before).await;
    let verified = browser.submit_code(token, &code_step.csrf_token(), &code).await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    let download_step = browser.open_link(token).await;
    assert_eq!(download_step.attr("#step", "data-step").as_deref(), Some("download"));
    let csrf = download_step.csrf_token();
    (browser, csrf)
}

/// The rows `after` added to `before` (which must be untouched).
fn added<'a>(before: &[String], after: &'a [String]) -> &'a [String] {
    assert_eq!(&after[..before.len()], before, "earlier rows changed");
    &after[before.len()..]
}

/// The storage keys the files table names.
fn keys(state: &DbState) -> Vec<String> {
    let mut keys: Vec<String> = state.files.iter().map(|f| f.split(' ').nth(1).unwrap().to_owned()).collect();
    keys.sort();
    keys
}

fn names(dir: &Path) -> Vec<String> {
    files_in(dir).into_iter().map(|(name, _)| name).collect()
}

pub(super) async fn signed_in_sender(base: &str, password: &str) -> (Browser, String) {
    let browser = Browser::new(base);
    let login = browser.get("/login").await;
    let answer = browser
        .post_form("/login", &[("csrf_token", &login.csrf_token()), ("email", SENDER), ("password", password)])
        .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let form = browser.get("/shares/new").await;
    assert_eq!(form.status, 200, "{}", form.body);
    let csrf = form.csrf_token();
    (browser, csrf)
}

async fn a_server_killed_mid_download_restarts_with_the_share_consumed_and_nothing_else_changed(backend: Backend) {
    let inst = Installation::new(backend).await;
    inst.add_sender(SENDER);
    let big = inst.dir.path().join("big.bin");
    std::fs::write(&big, (0..BIG).map(|i| (i % 251) as u8).collect::<Vec<u8>>()).unwrap();
    let small = inst.dir.path().join("other.txt");
    std::fs::write(&small, b"another file, for another day\n").unwrap();
    let token = create_share(&inst, &big);
    let other_token = create_share(&inst, &small);
    let (share, other) = (share_id(&inst, 0).await, share_id(&inst, 1).await);
    let mut server = inst.start(&[]);
    let base = server.base();
    let (browser, csrf) = verified_browser(&inst.smtp, &base, &token).await;
    let before = db_state(&inst.db).await;
    let mails_before = inst.smtp.messages().len();

    let mut response = browser.download(&token, &csrf).await;
    assert_eq!(response.status(), 200);
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let mut received = response.chunk().await.unwrap().expect("the first bytes").len();
    // All but the bytes is done once the first bytes arrive: the claim and its event were
    // committed before them (the receipt waits for the download to complete).
    let during = db_state(&inst.db).await;
    kill_9(&mut server);
    while let Ok(Some(chunk)) = response.chunk().await {
        received += chunk.len();
    }
    assert!(received < BIG, "the download finished before the kill ({received} bytes)");

    // The claim committed before the first byte: consumed, and nothing besides.
    assert_eq!(during.users, before.users);
    assert_eq!(during.files, before.files);
    let new_events = added(&before.events, &during.events);
    assert!(new_events.len() == 1 && new_events[0].ends_with(&format!(" {share} downloaded")), "{new_events:?}");
    assert_eq!(added(&before.outbox, &during.outbox).len(), 0, "a receipt before completion: {:?}", during.outbox);
    assert_eq!(during.shares[1], before.shares[1], "the other share changed");
    assert!(during.shares[0].starts_with(&format!("{share} ")) && during.shares[0].contains(" consumed consumed:"));

    // Started again: the same rows, both files still there (the downloaded one for its grace).
    let server = inst.start(&[]);
    assert_eq!(db_state(&inst.db).await, during);
    assert_eq!(names(&inst.files_dir()), keys(&during), "files on disk");
    // The same browser (its cookies) on the new server's port.
    let browser = Browser { base: server.base(), ..browser };
    // The claimer resumes: the bytes after the ones it had are right, and with the range the
    // killed server recorded before sending them, they complete the download.
    let tail = browser.fetch_file(&token, &[("Range", &format!("bytes={received}-")), ("If-Range", &etag)]).await;
    assert_eq!(tail.status(), 206);
    let tail = tail.bytes().await.unwrap();
    let whole: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    assert_eq!(tail.as_ref(), &whole[received..], "the resumed bytes differ");
    // Asking again is no second claim: the same 303, and the whole file this time.
    let again = browser.download(&token, &csrf).await;
    assert_eq!(again.status(), 200, "the claimer could not fetch the file again");
    assert!(again.bytes().await.unwrap().as_ref() == whole.as_slice(), "the refetched file differs");
    inst.smtp.wait_for(mails_before + 1, Duration::from_secs(10)).await;
    let kinds = event_kinds(&inst.db, share).await;
    assert_eq!(
        kinds.iter().filter(|k| *k == "downloaded").count(),
        1,
        "the killed download was claimed twice: {kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("download_completed"), "{kinds:?}");
    let stranger = Browser::new(&server.base()).get(&format!("/s/{token}/file")).await;
    assert_eq!(stranger.status, 410, "another browser was given the file");
    let other_landing = Browser::new(&server.base()).open_link(&other_token).await;
    assert_eq!(other_landing.status, 200, "{}", other_landing.body);

    // After the delivery grace the next pass takes the downloaded file, and only that.
    clock::set_ago(&inst.db, "shares", &["consumed_at", "delivery_started_at"], 16 * 60, &clock::id(share)).await;
    assert_eq!(Browser::new(&server.base()).get("/").await.status, 200);
    // The "purged" event is recorded just after the row is marked, so wait for the event.
    eventually(Duration::from_secs(10), "collection after the grace", async || {
        event_kinds(&inst.db, share).await.last().map(String::as_str) == Some("purged")
    })
    .await;
    assert_eq!(share_status(&inst.db, share).await, "purged");
    let end = db_state(&inst.db).await;
    let other_key = end.files[1].split(' ').nth(1).unwrap();
    assert_eq!(names(&inst.files_dir()), [other_key], "only the downloaded file goes");
    // File rows stay as the record of what was shared; only the downloaded one is marked purged.
    assert_eq!(end.files[1], before.files[1], "the other file changed");
    let (kept, marked) = end.files[0].split_once(" purged:").unwrap();
    assert_eq!(before.files[0], format!("{kept} purged:-"));
    assert_ne!(marked, "-", "the downloaded file is not marked purged");
    assert_eq!(end.shares[1], before.shares[1], "the other share changed");
    assert!(end.shares[0].contains(" purged consumed:"), "{:?}", end.shares);
    assert_eq!(event_kinds(&inst.db, share).await.last().map(String::as_str), Some("purged"));
    // The other share only saw the landing page opened once more.
    let other_events: Vec<String> = event_kinds(&inst.db, other).await;
    assert_eq!(other_events.last().map(String::as_str), Some("opened"));
    assert_eq!(other_events.len(), before.events.iter().filter(|e| e.contains(&format!(" {other} "))).count() + 1);
    assert_eq!(inst.smtp.messages().len(), mails_before + 1, "a mail was sent twice after the restart");
}

async fn a_download_killed_mid_way_and_finished_on_another_instance_completes_once(backend: Backend) {
    let inst = Installation::new(backend).await;
    inst.add_sender(SENDER);
    let whole: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    let big = inst.dir.path().join("big.bin");
    std::fs::write(&big, &whole).unwrap();
    let token = create_share(&inst, &big);
    let share = share_id(&inst, 0).await;
    // Two instances on the same database and files.
    let mut first = inst.start(&[]);
    let second = inst.start(&[]);
    let (browser, csrf) = verified_browser(&inst.smtp, &first.base(), &token).await;
    let mails_before = inst.smtp.messages().len();
    let receipts = "SELECT count(*) FROM mail_outbox WHERE share_id = $1 AND kind = 'download_receipt'";

    // The head from the first instance, which dies mid-way.
    let mut response = browser.download(&token, &csrf).await;
    assert_eq!(response.status(), 200);
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let mut received = Vec::new();
    while received.len() < BIG / 4 {
        received.extend_from_slice(&response.chunk().await.unwrap().expect("more bytes"));
    }
    kill_9(&mut first);
    while let Ok(Some(chunk)) = response.chunk().await {
        received.extend_from_slice(&chunk);
    }
    assert!(received.len() < BIG, "the download finished before the kill");
    assert_eq!(event_kinds(&inst.db, share).await.last().map(String::as_str), Some("downloaded"));
    assert_eq!(crate::support::count(&inst.db, receipts, share).await, 0, "a receipt before the tail");

    // The tail from the other instance, as a browser resumes it.
    let browser = Browser { base: second.base(), ..browser };
    let range = format!("bytes={}-", received.len());
    let tail = browser.fetch_file(&token, &[("Range", &range), ("If-Range", &etag)]).await;
    assert_eq!(tail.status(), 206);
    received.extend_from_slice(&tail.bytes().await.unwrap());
    assert!(received == whole, "the reassembled file differs");

    eventually(Duration::from_secs(10), "the resumed download completed", async || {
        event_kinds(&inst.db, share).await.last().map(String::as_str) == Some("download_completed")
    })
    .await;
    let mail = inst.smtp.wait_for(mails_before + 1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, [SENDER]);
    let kinds = event_kinds(&inst.db, share).await;
    assert_eq!(kinds.iter().filter(|k| *k == "downloaded").count(), 1, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "download_completed").count(), 1, "{kinds:?}");
    assert_eq!(crate::support::count(&inst.db, receipts, share).await, 1, "the receipt was queued twice");
    assert_eq!(inst.smtp.messages().len(), mails_before + 1, "the receipt went out twice");
}

async fn a_server_killed_mid_upload_leaves_no_share_and_its_temp_file_is_collected(backend: Backend) {
    let inst = Installation::new(backend).await;
    let password = inst.add_sender(SENDER);
    let small = inst.dir.path().join("other.txt");
    std::fs::write(&small, b"an earlier share\n").unwrap();
    create_share(&inst, &small);
    let mut server = inst.start(&[]);
    let (browser, csrf) = signed_in_sender(&server.base(), &password).await;
    let before = db_state(&inst.db).await;

    // 8 MiB of a bigger file, then the sender's side goes quiet and the server is killed.
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let request = upload_request(&browser.client, &server.base(), reqwest::Body::wrap(ChannelBody(rx)));
    let upload = tokio::spawn(request.send());
    tx.send(Bytes::from(upload_head(&csrf, RECIPIENT, "half.bin"))).await.unwrap();
    for _ in 0..8 {
        tx.send(Bytes::from(vec![7u8; 1 << 20])).await.unwrap();
    }
    let files_dir = inst.files_dir();
    let temp_size = || files_in(&files_dir).into_iter().filter(|(n, _)| is_temp(n)).map(|(_, s)| s).max().unwrap_or(0);
    eventually(Duration::from_secs(30), "the upload reaching the disk", async || temp_size() >= 6 << 20).await;
    kill_9(&mut server);
    assert!(upload.await.unwrap().is_err(), "the killed upload got an answer");
    drop(tx);

    // No share, no file row, no event, no mail: exactly the state before the upload.
    assert_eq!(db_state(&inst.db).await, before);
    let on_disk = names(&files_dir);
    let temps: Vec<&String> = on_disk.iter().filter(|n| is_temp(n)).collect();
    assert_eq!(temps.len(), 1, "{on_disk:?}");
    let temp = temps[0].clone();
    let stored: Vec<String> = on_disk.iter().filter(|n| !is_temp(n)).cloned().collect();
    assert_eq!(stored, keys(&before), "a stored file appeared: {on_disk:?}");

    // Started again: the young temp file stays (it could be an upload in progress) and is
    // never served; once it is older than the leftover age the timer removes it.
    // The timer sweeps leftovers at the maintenance interval.
    let server = inst.start(&["--gc-interval", "1s", "--maintenance-interval", "1s"]);
    let temp_key = temp.strip_prefix(watasu::storage::store::TEMP_PREFIX).unwrap();
    assert_eq!(Browser::new(&server.base()).get(&format!("/s/{temp_key}")).await.status, 404);
    // An old temp file beside it is the signal that a leftover sweep has run.
    let old_marker = files_dir.join(format!("{}marker", watasu::storage::store::TEMP_PREFIX));
    std::fs::write(&old_marker, b"old").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options().write(true).open(&old_marker).unwrap().set_modified(two_hours_ago).unwrap();
    eventually(Duration::from_secs(10), "a leftover sweep", async || !old_marker.exists()).await;
    assert!(files_dir.join(&temp).exists(), "a young temp file was swept");
    let old =
        std::time::SystemTime::now() - watasu::lifecycle::leftover_sweep::LEFTOVER_MIN_AGE - Duration::from_secs(60);
    std::fs::File::options().write(true).open(files_dir.join(&temp)).unwrap().set_modified(old).unwrap();
    eventually(Duration::from_secs(10), "the leftover sweep", async || !files_dir.join(&temp).exists()).await;
    tokio::task::block_in_place(|| server.wait_for_log("removed leftovers", Duration::from_secs(10)));
    assert_eq!(names(&files_dir), keys(&before));
    assert_eq!(db_state(&inst.db).await, before);

    // And uploads work again, with the same signed-in session.
    let page = crate::support::Page::read(
        upload_request(&browser.client, &server.base(), upload_body(&csrf, RECIPIENT, "whole.txt", b"whole").into())
            .send()
            .await
            .unwrap(),
    )
    .await
    .follow_created(&browser.client, &server.base())
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let after = db_state(&inst.db).await;
    assert_eq!(after.shares.len(), before.shares.len() + 1);
    assert_eq!(names(&files_dir), keys(&after));
}

both_backends!(
    a_server_killed_mid_download_restarts_with_the_share_consumed_and_nothing_else_changed,
    a_download_killed_mid_way_and_finished_on_another_instance_completes_once,
    a_server_killed_mid_upload_leaves_no_share_and_its_temp_file_is_collected
);
