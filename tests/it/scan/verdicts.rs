//! clamd's verdicts: clean releases the handover, a virus refuses it, a file too large for clamd
//! goes by the admin's policy; with the scan off nothing waits.

use std::time::Duration;

use watasu::{i18n::Lang, maintenance::Trigger, scan::TooLargePolicy, storage::StoreError};

use super::{
    RECIPIENT, notification_status, readyz, refusal_notice, scan_states, scanning_app, scrape, send, sender_reads,
    share_page, token, wait_for_states,
};
use crate::support::{
    Backend, TestApp, clamd,
    clamd::{EICAR, EICAR_NAME, STREAM_MAX},
    event_kinds, s3, texts,
};

async fn shared_clamd() -> String {
    tokio::task::spawn_blocking(|| clamd::shared().url()).await.unwrap()
}

async fn a_clean_file_is_released_and_its_recipient_mailed(backend: Backend) {
    let app = scanning_app(backend, &shared_clamd().await, |_| {}).await;

    let created = send(&app, &[("report.pdf", b"quarterly figures, nothing else")]).await;
    let mail = app.smtp.wait_for(1, Duration::from_secs(30)).await.remove(0);

    assert_eq!(scan_states(&app, created.share_id).await, ["clean"]);
    assert!(mail.text().contains(&created.link), "{}", mail.text());
    assert!(mail.data.contains(RECIPIENT));
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let page = share_page(&app, created.share_id).await;
    assert_eq!(page.attrs("[data-scan]", "data-scan"), ["clean"]);
    assert!(readyz(&app).await.contains("scan backlog: 0"));
    assert!(scrape(&app).await.contains(r#"watasu_scan_results_total{result="clean"} 1"#));
}

async fn the_eicar_file_refuses_its_handover_and_its_bytes_are_deleted(backend: Backend) {
    let app = scanning_app(backend, &shared_clamd().await, |_| {}).await;
    sender_reads(&app, Lang::En).await;

    let created = send(&app, &[("notes.txt", b"harmless notes"), ("invoice.com", EICAR)]).await;
    wait_for_states(&app, created.share_id, &["clean", "infected"]).await;
    super::held::wait_until_ended(&app, created.share_id).await;

    let finding = texts(app.db(), "SELECT scan_finding FROM files WHERE scan_state = 'infected' AND $1 = $1", 0).await;
    assert!(finding[0].starts_with(EICAR_NAME), "{finding:?}");
    assert!(event_kinds(&app, created.share_id).await.contains(&"scan_refused".to_owned()));
    // The notification is dropped, never sent, and the link opens nothing.
    let outbox = app.state.services.mails.outbox();
    outbox.deliver_due(app.state.mailer.as_ref(), 20).await.unwrap();
    assert_eq!(notification_status(&app, created.share_id).await, ["dropped"]);
    // The sender is told which file and why, in their language.
    let notice = refusal_notice(&app, Lang::En).await;
    assert!(
        notice.text().contains(&format!("invoice.com: Refused: a virus was found ({EICAR_NAME}")),
        "{}",
        notice.text()
    );
    assert!(!notice.text().contains("notes.txt"), "{}", notice.text());
    // Another pass (here, or in another instance) tells nobody twice.
    app.state.services.scanning.scan_due().await.unwrap();
    let notices = "SELECT count(*) FROM mail_outbox WHERE kind = 'scan_refused' AND $1 = $1";
    assert_eq!(crate::support::count(app.db(), notices, 0).await, 1);
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 404, "{}", landing.body);
    // The sender's page says which file and why.
    let page = share_page(&app, created.share_id).await;
    assert_eq!(page.attrs("[data-scan]", "data-scan"), ["clean", "infected"]);
    let marks = page.texts("[data-scan=infected]");
    assert!(marks[0].contains(EICAR_NAME), "{marks:?}");
    let refused = page.texts("li[data-kind=scan_refused]");
    assert!(refused.iter().any(|line| line.contains("the virus check refused a file")), "{refused:?}");
    // The GC deletes both files, as it does a revoked share's.
    let keys = texts(app.db(), "SELECT storage_key FROM files WHERE $1 = $1 ORDER BY position", 0).await;
    app.state.services.gc.gc().collect(5, Trigger::Cli).await.unwrap();
    for key in keys {
        assert!(matches!(app.state.store.open(&key).await, Err(StoreError::NotFound)), "{key} is still stored");
    }
}

async fn a_file_too_large_for_clamd_is_refused_under_the_refuse_policy(backend: Backend) {
    let app = scanning_app(backend, &shared_clamd().await, |_| {}).await;
    sender_reads(&app, Lang::Ja).await;
    let large = vec![b'a'; STREAM_MAX * 2];

    let created = send(&app, &[("archive.bin", &large)]).await;
    wait_for_states(&app, created.share_id, &["refused"]).await;
    super::held::wait_until_ended(&app, created.share_id).await;

    let finding = texts(app.db(), "SELECT scan_finding FROM files WHERE $1 = $1", 0).await;
    assert_eq!(finding, ["too_large"]);
    let page = share_page(&app, created.share_id).await;
    assert_eq!(page.attrs("[data-scan]", "data-scan"), ["refused"]);
    assert!(page.texts("[data-scan]")[0].contains("too large"), "{:?}", page.texts("[data-scan]"));
    let notice = refusal_notice(&app, Lang::Ja).await;
    let why = Lang::Ja.text().dashboard.scan.refused_too_large.replace('|', "");
    assert!(notice.text().contains(&format!("archive.bin: {why}")), "{}", notice.text());
}

async fn a_file_too_large_for_clamd_is_released_marked_under_the_release_policy(backend: Backend) {
    let clamd = shared_clamd().await;
    let app = scanning_app(backend, &clamd, |s| s.scan.scan_too_large = TooLargePolicy::Release).await;
    let large = vec![b'a'; STREAM_MAX * 2];

    let created = send(&app, &[("archive.bin", &large)]).await;
    app.smtp.wait_for(1, Duration::from_secs(30)).await;

    assert_eq!(scan_states(&app, created.share_id).await, ["too_large"]);
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let page = share_page(&app, created.share_id).await;
    assert_eq!(page.texts("[data-scan=too_large]"), ["Not scanned: too large"]);
}

async fn files_in_the_object_store_are_scanned_through_clamd_s_unix_socket(backend: Backend) {
    let socket = tokio::task::spawn_blocking(|| clamd::shared().socket()).await.unwrap();
    let s3 = tokio::task::spawn_blocking(s3::shared).await.unwrap();
    let bucket = s3.create_bucket();
    let app = scanning_app(backend, &socket, |s| s.storage = s3.storage_settings(&bucket)).await;
    // Over one chunk sent to clamd, under its StreamMaxLength.
    let clean: Vec<u8> = (0..STREAM_MAX * 9 / 10).map(|i| (i % 251) as u8).collect();

    let released = send(&app, &[("figures.bin", &clean)]).await;
    let refused = send(&app, &[("invoice.com", EICAR)]).await;
    wait_for_states(&app, released.share_id, &["clean"]).await;
    wait_for_states(&app, refused.share_id, &["infected"]).await;

    // The recipient's notification of the clean file, and the sender's notice of the other.
    let mails = app.smtp.wait_for(2, Duration::from_secs(30)).await;
    let notification = mails.iter().find(|mail| mail.to == [RECIPIENT]).expect("the recipient's mail");
    assert!(notification.text().contains(&released.link));
    assert!(!mails.iter().any(|mail| mail.text().contains(&refused.link)), "the refused link was mailed");
    super::held::wait_until_ended(&app, refused.share_id).await;
}

async fn with_the_scan_off_nothing_is_held(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password(super::SENDER, "Sender Sato", crate::support::PASSWORD).await;

    let created = send(&app, &[("report.pdf", EICAR)]).await;
    app.smtp.wait_for(1, Duration::from_secs(30)).await;

    assert_eq!(scan_states(&app, created.share_id).await, ["none"]);
    assert_eq!(readyz(&app).await, "ready\n");
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
}

crate::both_backends!(
    a_clean_file_is_released_and_its_recipient_mailed,
    the_eicar_file_refuses_its_handover_and_its_bytes_are_deleted,
    a_file_too_large_for_clamd_is_refused_under_the_refuse_policy,
    a_file_too_large_for_clamd_is_released_marked_under_the_release_policy,
    files_in_the_object_store_are_scanned_through_clamd_s_unix_socket,
    with_the_scan_off_nothing_is_held,
);
