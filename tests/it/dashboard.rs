//! The sender's dashboard: uploads that stream to disk under a cap, the link shown once, the list
//! and the share page, revoking, and the ownership rule (someone else's share is a 404).

use std::time::Duration;

use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp},
};
use watasu::sql;

/// Posts the new-share form as a browser without JavaScript would, following a success to the
/// created page.
async fn upload(browser: &Browser, csrf: Option<&str>, recipient: &str, file_name: &str, content: Vec<u8>) -> Page {
    let page = browser.post_new_share(csrf, recipient, file_name, content).await;
    if page.status == 303 { page.follow_created(&browser.client, &browser.base).await } else { page }
}

async fn new_share_csrf(browser: &Browser) -> String {
    browser.get("/shares/new").await.csrf_token()
}

fn stored_files(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.path().join("files"))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

fn share_id_of(page: &Page) -> i64 {
    let href = page.attr("a.created-share", "href").unwrap();
    href.trim_start_matches("/shares/").parse().unwrap()
}

async fn an_upload_creates_a_share_shows_the_link_once_and_mails_the_recipient(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    let page = upload(&browser, Some(&csrf), "client@example.test", "報告書.pdf", b"%PDF-1.7 contents".to_vec()).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let link = page.attr("#share-link", "value").expect("the link is shown");
    assert!(link.starts_with(&format!("{}/s/", app.base)), "{link}");
    assert_eq!(stored_files(&app).len(), 1);

    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, ["client@example.test"]);
    assert!(mail.text().contains(&link), "the notification does not carry the link");

    let landing = app.browser().get(link.strip_prefix(&app.base).unwrap()).await;
    assert_eq!(landing.status, 200);
    assert!(landing.body.contains("Sender Sato"));

    let list = browser.get("/shares").await;
    assert_eq!(list.texts(".share-recipient"), ["client@example.test"]);
    assert_eq!(list.attr(".share-row", "data-status").as_deref(), Some("waiting"));
    let share = browser.get(&format!("/shares/{}", share_id_of(&page))).await;
    assert_eq!(share.status, 200);
    assert!(share.body.contains("報告書.pdf"));
    assert!(!share.body.contains(&link), "the share page must not know the link any more");
}

async fn an_upload_over_the_cap_is_413_and_leaves_nothing_on_disk(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = 100 * 1024).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    // Under the declared-length check but over the cap: refused while streaming.
    let streamed = upload(&browser, Some(&csrf), "c@example.test", "big.bin", vec![0u8; 120 * 1024]).await;
    assert_eq!(streamed.status, 413);
    // Over the largest form by its declared length: refused at the file without storing a byte,
    // the body read (up to twice the largest form) so that the client sees the answer.
    let declared = upload(&browser, Some(&csrf), "c@example.test", "bigger.bin", vec![0u8; 300 * 1024]).await;
    assert_eq!(declared.status, 413);
    assert!(stored_files(&app).is_empty(), "{:?}", stored_files(&app));
    let shares = crate::support::count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await;
    assert_eq!(shares, 0);
}

async fn an_upload_without_the_csrf_token_is_refused_and_stores_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let page = upload(&browser, None, "c@example.test", "a.txt", b"x".to_vec()).await;
    assert_eq!(page.status, 403);
    let wrong = upload(&browser, Some(&"0".repeat(64)), "c@example.test", "a.txt", b"x".to_vec()).await;
    assert_eq!(wrong.status, 403);
    assert!(stored_files(&app).is_empty());
}

async fn an_invalid_recipient_is_refused_with_a_clear_message_before_storing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    for bad in ["not an address", "a@b.c\r\nBcc: x@y.z", ""] {
        let page = upload(&browser, Some(&csrf), bad, "a.txt", b"x".to_vec()).await;
        assert_eq!(page.status, 400, "{bad:?}");
        assert_eq!(page.texts("[role=alert]").len(), 1, "{bad:?}");
    }
    assert!(stored_files(&app).is_empty());
}

async fn hostile_file_names_are_stored_safely_and_shown_escaped(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    for (name, shown) in [
        ("../../etc/passwd", "passwd"),
        ("<img src=x onerror=alert(1)>.txt", "<img src=x onerror=alert(1)>.txt"),
        ("見積書 (最終).xlsx", "見積書 (最終).xlsx"),
    ] {
        let page = upload(&browser, Some(&csrf), "c@example.test", name, b"x".to_vec()).await;
        assert_eq!(page.status, 200, "{name}");
        let share = browser.get(&format!("/shares/{}", share_id_of(&page))).await;
        assert_eq!(
            share.texts(".share-file")[0].split(" (").next().unwrap().trim(),
            shown.split(" (").next().unwrap(),
            "{name}"
        );
        assert!(!share.body.contains("<img src=x"), "not escaped: {name}");
    }
    for stored in stored_files(&app) {
        assert!(watasu::session::is_token_shaped(&stored), "a stored name came from user input: {stored}");
    }
}

async fn another_senders_share_is_a_404_for_view_and_revoke(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.signed_in_sender("owner@example.test").await;
    let csrf = new_share_csrf(&owner).await;
    let id = share_id_of(&upload(&owner, Some(&csrf), "c@example.test", "a.txt", b"x".to_vec()).await);
    let other = app.signed_in_sender("other@example.test").await;
    assert_eq!(other.get(&format!("/shares/{id}")).await.status, 404);
    assert_eq!(other.get(&format!("/shares/{}", id + 1000)).await.status, 404, "unknown ids answer the same");
    let other_csrf = new_share_csrf(&other).await;
    for action in ["revoke", "link", "unlock"] {
        let answer = other.post_form(&format!("/shares/{id}/{action}"), &[("csrf_token", &other_csrf)]).await;
        assert_eq!(answer.status, 404, "{action} on someone else's share");
    }
    assert!(other.get("/shares").await.texts(".share-recipient").is_empty());
    let status = owner.get(&format!("/shares/{id}")).await;
    assert_eq!(status.attr("[data-status]", "data-status").as_deref(), Some("waiting"), "someone else revoked it");
}

async fn the_owner_revokes_and_the_link_stops_working(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    let page = upload(&browser, Some(&csrf), "c@example.test", "a.txt", b"x".to_vec()).await;
    let link = page.attr("#share-link", "value").unwrap();
    let id = share_id_of(&page);
    let share = browser.get(&format!("/shares/{id}")).await;
    let answer = browser.post_form(&format!("/shares/{id}/revoke"), &[("csrf_token", &share.csrf_token())]).await;
    assert_eq!(answer.status, 303);
    let after = browser.get(&format!("/shares/{id}")).await;
    assert!(matches!(after.attr("[data-status]", "data-status").as_deref(), Some("revoked" | "deleted")));
    assert!(after.attr("[data-kind=revoked]", "data-kind").is_some(), "no revoked event on the timeline");
    assert_eq!(app.browser().get(link.strip_prefix(&app.base).unwrap()).await.status, 404);
}

async fn a_fresh_link_replaces_the_old_one_and_lifts_a_lock(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    let page = upload(&browser, Some(&csrf), "c@example.test", "a.txt", b"x".to_vec()).await;
    let (old, id) = (page.attr("#share-link", "value").unwrap(), share_id_of(&page));
    app.smtp.wait_for(1, Duration::from_secs(10)).await;
    crate::support::execute(
        app.db(),
        sql!("UPDATE shares SET locked_at = " now ", wrong_codes = 15 WHERE id = $1"),
        id,
    )
    .await;
    let locked = browser.get(&format!("/shares/{id}")).await;
    assert_eq!(locked.attr("[data-status]", "data-status").as_deref(), Some("locked"));
    let renewed = browser.post_form(&format!("/shares/{id}/link"), &[("csrf_token", &locked.csrf_token())]).await;
    let renewed = renewed.follow(&browser, &[]).await;
    assert_eq!(renewed.status, 200);
    let new = renewed.attr("#share-link", "value").expect("the fresh link is shown");
    assert_ne!(new, old);
    assert_eq!(renewed.attr("[data-status]", "data-status").as_deref(), Some("waiting"), "the lock stayed");
    assert_eq!(app.browser().get(old.strip_prefix(&app.base).unwrap()).await.status, 404, "the old link still works");
    assert_eq!(app.browser().get(new.strip_prefix(&app.base).unwrap()).await.status, 200);
    let mail = app.smtp.wait_for(2, Duration::from_secs(10)).await.pop().unwrap();
    assert!(mail.text().contains(&new), "the fresh link was not mailed");
}

async fn a_locked_share_can_be_unlocked_by_its_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = new_share_csrf(&browser).await;
    let id = share_id_of(&upload(&browser, Some(&csrf), "c@example.test", "a.txt", b"x".to_vec()).await);
    crate::support::execute(
        app.db(),
        sql!("UPDATE shares SET locked_at = " now ", wrong_codes = 15 WHERE id = $1"),
        id,
    )
    .await;
    let page = browser.get(&format!("/shares/{id}")).await;
    let answer = browser.post_form(&format!("/shares/{id}/unlock"), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(answer.status, 303);
    let after = browser.get(&format!("/shares/{id}")).await;
    assert_eq!(after.attr("[data-status]", "data-status").as_deref(), Some("waiting"));
    assert!(after.attr("[data-kind=unlocked]", "data-kind").is_some());
}

async fn shares_made_on_the_command_line_show_in_the_senders_list(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let sender_id = crate::support::count(app.db(), "SELECT id FROM users WHERE id = $1", 1).await;
    // create_share_with is the code path of `watasu share create`.
    app.fake_share().sender(sender_id).recipient("cli@example.test").file("from-cli.txt", b"x").create().await;
    let list = browser.get("/shares").await;
    assert_eq!(list.texts(".share-recipient"), ["cli@example.test"]);
}

async fn the_dashboard_needs_a_signed_in_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.browser();
    for path in ["/shares", "/shares/new", "/shares/1"] {
        let page = browser.get(path).await;
        assert_eq!((page.status.as_u16(), page.header("location")), (303, Some("/login")), "{path}");
    }
}

both_backends!(
    an_upload_creates_a_share_shows_the_link_once_and_mails_the_recipient,
    an_upload_over_the_cap_is_413_and_leaves_nothing_on_disk,
    an_upload_without_the_csrf_token_is_refused_and_stores_nothing,
    an_invalid_recipient_is_refused_with_a_clear_message_before_storing,
    hostile_file_names_are_stored_safely_and_shown_escaped,
    another_senders_share_is_a_404_for_view_and_revoke,
    the_owner_revokes_and_the_link_stops_working,
    a_fresh_link_replaces_the_old_one_and_lifts_a_lock,
    a_locked_share_can_be_unlocked_by_its_sender,
    shares_made_on_the_command_line_show_in_the_senders_list,
    the_dashboard_needs_a_signed_in_sender
);
