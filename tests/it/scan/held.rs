//! A file clamd gives no verdict for stays held: its recipient is not mailed, its link opens
//! nothing, `/readyz` and the metrics show the backlog; it is released once clamd answers, and
//! refused after the retry limit, never released unscanned.

use std::time::Duration;

use watasu::i18n::Lang;

use super::{notification_status, readyz, scan_states, scanning_app, scrape, send, token, wait_for_states};
use crate::support::{Backend, TestApp, clamd::Clamd, count, event_kinds, execute, process::free_local_addr, texts};

/// Waits until the share has ended (revoked by the scan's refusal).
pub(crate) async fn wait_until_ended(app: &TestApp, share_id: i64) {
    // The timeline's line comes right after the share's end: wait for both.
    const ENDED: &str = "SELECT count(*) FROM shares s WHERE s.id = $1 AND s.revoked_at IS NOT NULL
                           AND EXISTS (SELECT 1 FROM share_events e WHERE e.share_id = s.id AND e.kind = 'scan_refused')";
    crate::support::eventually(Duration::from_secs(30), "the share's end", async || {
        count(app.db(), ENDED, share_id).await == 1
    })
    .await;
}

/// Waits until clamd has failed to answer for the file at least `attempts` times.
pub(crate) async fn wait_for_attempts(app: &TestApp, share_id: i64, attempts: i64) {
    crate::support::eventually(Duration::from_secs(30), "an unanswered scan", async || {
        count(
            app.db(),
            "SELECT CAST(COALESCE(MAX(f.scan_attempts), 0) AS BIGINT) FROM shares s JOIN files f ON f.handover_id = s.handover_id
              WHERE s.id = $1",
            share_id,
        )
        .await
            >= attempts
    })
    .await;
}

/// Makes every waiting file due now, as if its backoff had passed.
pub(crate) async fn backoff_passes(app: &TestApp) {
    let due_now =
        watasu::db::Sql::same("UPDATE files SET scan_next_at = NULL WHERE scan_state = 'pending' AND $1 = $1");
    assert!(execute(app.db(), due_now, 0).await >= 1, "no file was waiting");
    app.state.services.scanning.scan_due().await.unwrap();
}

/// The held share as the recipient and the outbox meet it: the link answers "being checked",
/// and a delivery pass sends nothing.
async fn assert_held(app: &TestApp, created: &watasu::services::sharing::Created) {
    let landing = app.browser().get(&format!("/s/{}?lang=en", token(created))).await;
    assert_eq!(landing.status, 409, "{}", landing.body);
    assert!(landing.body.contains("being checked"), "{}", landing.body);
    let outbox = app.state.services.mails.outbox();
    let report = outbox.deliver_due(app.state.mailer.as_ref(), 20).await.unwrap();
    assert_eq!(report.attempted(), 0, "a held share's mail was tried: {report:?}");
    assert_eq!(notification_status(app, created.share_id).await, ["pending"]);
    assert!(app.smtp.messages().is_empty());
}

async fn a_file_is_held_while_clamd_is_down_and_released_when_it_is_back(backend: Backend) {
    let mut clamd = tokio::task::spawn_blocking(Clamd::start).await.unwrap();
    let clamd_url = clamd.url();
    clamd.stop();
    let app = scanning_app(backend, &clamd_url, |_| {}).await;

    let created = send(&app, &[("report.pdf", b"figures")]).await;
    wait_for_attempts(&app, created.share_id, 1).await;

    assert_eq!(scan_states(&app, created.share_id).await, ["pending"]);
    assert_held(&app, &created).await;
    assert!(readyz(&app).await.contains("scan backlog: 1"), "{}", readyz(&app).await);
    let metrics = scrape(&app).await;
    assert!(metrics.lines().any(|l| l == "watasu_scan_backlog 1"), "{metrics}");
    assert!(metrics.contains(r#"watasu_scan_results_total{result="unanswered"}"#), "{metrics}");

    let clamd = tokio::task::spawn_blocking(move || {
        clamd.start_again();
        clamd
    })
    .await
    .unwrap();
    backoff_passes(&app).await;
    let mail = app.smtp.wait_for(1, Duration::from_secs(30)).await.remove(0);

    assert_eq!(scan_states(&app, created.share_id).await, ["clean"]);
    assert!(mail.text().contains(&created.link));
    assert!(readyz(&app).await.contains("scan backlog: 0"));
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    drop(clamd);
}

/// A clamd that accepts connections and never says a word.
async fn silent_clamd() -> (String, tokio::task::JoinHandle<()>) {
    let (address, task) = crate::support::silent_listener().await;
    (format!("tcp://{address}"), task)
}

async fn a_clamd_that_never_answers_keeps_the_file_held(backend: Backend) {
    let (url, silent) = silent_clamd().await;
    let app = scanning_app(backend, &url, |s| s.scan.scan_timeout = Duration::from_millis(500)).await;

    let created = send(&app, &[("report.pdf", b"figures")]).await;
    wait_for_attempts(&app, created.share_id, 1).await;

    assert_eq!(scan_states(&app, created.share_id).await, ["pending"]);
    let finding = texts(app.db(), "SELECT scan_finding FROM files WHERE $1 = $1", 0).await;
    assert_eq!(finding, ["clamd_timeout"]);
    assert_held(&app, &created).await;
    silent.abort();
}

async fn a_file_clamd_never_answers_for_is_refused_after_the_retry_limit(backend: Backend) {
    // Nothing listens there: every scan finds clamd down.
    let url = format!("tcp://{}", free_local_addr());
    let app = scanning_app(backend, &url, |s| s.scan.scan_attempts = 2).await;
    super::sender_reads(&app, Lang::En).await;

    let created = send(&app, &[("report.pdf", b"figures")]).await;
    wait_for_attempts(&app, created.share_id, 1).await;
    assert_eq!(scan_states(&app, created.share_id).await, ["pending"]);
    backoff_passes(&app).await;
    wait_for_states(&app, created.share_id, &["refused"]).await;
    wait_until_ended(&app, created.share_id).await;

    let finding = texts(app.db(), "SELECT scan_finding FROM files WHERE $1 = $1", 0).await;
    assert_eq!(finding, ["no_answer"]);
    assert!(event_kinds(&app, created.share_id).await.contains(&"scan_refused".to_owned()));
    let landing = app.browser().get(&format!("/s/{}", token(&created))).await;
    assert_eq!(landing.status, 404, "{}", landing.body);
    app.state.services.mails.outbox().deliver_due(app.state.mailer.as_ref(), 20).await.unwrap();
    assert_eq!(notification_status(&app, created.share_id).await, ["dropped"]);
    let notice = super::refusal_notice(&app, Lang::En).await;
    assert!(notice.text().contains("report.pdf: Refused: the virus check could not be done"), "{}", notice.text());
}

crate::both_backends!(
    a_file_is_held_while_clamd_is_down_and_released_when_it_is_back,
    a_clamd_that_never_answers_keeps_the_file_held,
    a_file_clamd_never_answers_for_is_refused_after_the_retry_limit,
);
