//! Expiry and collection: an expired upload is a 404 and the GC deletes its bytes and row with a
//! ledger item; the leftover sweep tells live partial files from orphans; a disabled sender's
//! uploads expire at once.

use std::time::{Duration, SystemTime};

use watasu::maintenance::Trigger;

use super::{Tus, files_dir, storage_key};
use crate::support::{Backend, TestApp, clock, count};

async fn settled(backend: crate::support::Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await
}

fn age(path: &std::path::Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

async fn an_expired_upload_is_404_and_the_gc_deletes_its_bytes_and_row_with_a_ledger_item(backend: Backend) {
    let app = settled(backend).await;
    let tus = Tus::sender(&app, "tus-expiry@example.test").await;
    let path = tus.create(10).await;
    tus.patch(&path, 0, b"abc").await;
    let finished = tus.upload(b"done").await;
    let (partial_key, finished_key) = (storage_key(&app, &path).await, storage_key(&app, &finished).await);
    // Sliding: a day after the last bytes, not after creation.
    app.shift_back("uploads", &["created_at", "expires_at"], clock::DAY - clock::MINUTE, clock::ALL).await;
    assert_eq!(tus.head(&path).await.status, 200, "still live a minute before its expiry");
    app.shift_back("uploads", &["expires_at"], 2 * clock::MINUTE, clock::ALL).await;
    assert_eq!(tus.head(&path).await.status, 404);
    assert_eq!(tus.patch(&path, 3, b"d").await.status, 404);
    let report = app.state.services.gc.gc().collect(100, Trigger::Cli).await.unwrap();
    assert_eq!(report.uploads, 2);
    assert!(!files_dir(&app).join(format!(".part-{partial_key}")).exists());
    assert!(!files_dir(&app).join(&finished_key).exists());
    assert_eq!(count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await, 0);
    let items = count(
        app.db(),
        "SELECT COUNT(*) FROM maintenance_items WHERE target_kind = 'upload' AND outcome = 'deleted' AND $1 = $1",
        0,
    )
    .await;
    assert_eq!(items, 2);
    assert_eq!(
        app.state.services.gc.gc().collect(100, Trigger::Cli).await.unwrap(),
        Default::default(),
        "the next pass is empty"
    );
}

async fn an_after_response_pass_leaves_expired_uploads_to_the_timer(backend: Backend) {
    let app = settled(backend).await;
    let tus = Tus::sender(&app, "tus-timer@example.test").await;
    let finished = tus.upload(b"done").await;
    let key = storage_key(&app, &finished).await;
    app.shift_back("uploads", &["created_at", "expires_at"], clock::DAY + clock::MINUTE, clock::ALL).await;

    assert_eq!(app.state.services.gc.gc().collect(100, Trigger::Request).await.unwrap(), Default::default());
    assert!(files_dir(&app).join(&key).exists());
    assert_eq!(app.state.services.gc.gc().collect(100, Trigger::Timer).await.unwrap().uploads, 1);
    assert!(!files_dir(&app).join(&key).exists());
    assert_eq!(count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await, 0);
}

async fn the_leftover_sweep_keeps_a_live_partial_and_removes_an_orphan_one(backend: Backend) {
    let app = settled(backend).await;
    let tus = Tus::sender(&app, "tus-leftover@example.test").await;
    let live = tus.create(10).await;
    let finished = tus.upload(b"finished, not shared").await;
    let live_file = files_dir(&app).join(format!(".part-{}", storage_key(&app, &live).await));
    let finished_file = files_dir(&app).join(storage_key(&app, &finished).await);
    let orphan = files_dir(&app).join(format!(".part-{}", "cd".repeat(32)));
    std::fs::write(&orphan, b"left by a crash").unwrap();
    for file in [&live_file, &finished_file, &orphan] {
        age(file, 7200);
    }
    let report = app.state.services.gc.gc().remove_leftovers().await.unwrap();
    assert_eq!(report.orphan_files, 1);
    assert!(!orphan.exists());
    assert!(live_file.exists() && finished_file.exists());
    assert_eq!(tus.offset(&live).await, 0);
}

async fn disabling_a_sender_expires_their_uploads_and_the_gc_frees_the_space(backend: Backend) {
    let app = settled(backend).await;
    app.create_admin("admin@example.test").await;
    let tus = Tus::sender(&app, "tus-disabled@example.test").await;
    let path = tus.create(10).await;
    let sender_id =
        count(app.db(), "SELECT id FROM users WHERE email = 'tus-disabled@example.test' AND $1 = $1", 0).await;
    let admin = app.sign_in("admin@example.test", crate::support::PASSWORD).await;
    let team = admin.get("/team").await;
    let answer = admin.post_form(&format!("/team/{sender_id}/disable"), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(answer.status, 303);
    assert_eq!(tus.head(&path).await.status, 403);
    assert_eq!(tus.patch(&path, 0, b"abc").await.status, 403);
    let report = app.state.services.gc.gc().collect(100, Trigger::Cli).await.unwrap();
    assert_eq!(report.uploads, 1);
    assert_eq!(count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await, 0);
}

crate::both_backends!(
    an_expired_upload_is_404_and_the_gc_deletes_its_bytes_and_row_with_a_ledger_item,
    an_after_response_pass_leaves_expired_uploads_to_the_timer,
    the_leftover_sweep_keeps_a_live_partial_and_removes_an_orphan_one,
    disabling_a_sender_expires_their_uploads_and_the_gc_frees_the_space
);

async fn a_senders_account_deletion_removes_their_uploads_and_counts_them_in_the_evidence(backend: Backend) {
    use crate::deletion::fixtures::{deletion_app, wait_for_state};
    let app = deletion_app(backend).await;
    let tus = Tus::sender(&app, "tus-leaving@example.test").await;
    let unfinished = tus.create(10).await;
    tus.patch(&unfinished, 0, b"abc").await;
    let finished = tus.upload(b"finished, never shared").await;
    let keys = [storage_key(&app, &unfinished).await, storage_key(&app, &finished).await];
    let account = tus.browser.get("/account").await;
    let answer = tus
        .browser
        .post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", crate::support::PASSWORD)])
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let reference = answer.texts(".case-reference").pop().unwrap();
    wait_for_state(&app, &reference, watasu::deletion::CaseState::Completed).await;
    assert_eq!(count(app.db(), "SELECT COUNT(*) FROM uploads WHERE $1 = $1", 0).await, 0);
    assert!(!files_dir(&app).join(format!(".part-{}", keys[0])).exists());
    assert!(!files_dir(&app).join(&keys[1]).exists());
    let case = app.state.services.deletion.cases().find_by_reference(&reference).await.unwrap().unwrap();
    let evidence = app.state.services.deletion.cases().evidence(case.id).await.unwrap();
    let uploads = evidence.iter().find(|e| e.store == "uploads").expect("the evidence names the uploads");
    assert_eq!((uploads.found, uploads.deleted), (Some(2), Some(2)));
}

crate::both_backends!(a_senders_account_deletion_removes_their_uploads_and_counts_them_in_the_evidence);
