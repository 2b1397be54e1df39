//! What a sender reads about a share: its real outcome (downloaded, expired unused, ended early,
//! locked) with the file's deletion as a line of its own, a timeline with the expiry and new
//! links, repeats grouped, and a live part whose poll says "no change" until something changes.

use watasu::{
    i18n::Lang,
    maintenance::Trigger,
    share::{EventKind, ShareEvents},
};

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, TestShare, execute},
};
use watasu::sql;

/// A sender signed in over HTTP (pages in English) and a one-hour share of theirs.
async fn sender_with_share(app: &TestApp) -> (Browser, TestShare) {
    let sender = app.create_sender_with_password("owner@example.test", "Sender Sato", PASSWORD).await;
    let browser = app.sign_in("owner@example.test", PASSWORD).await;
    let share =
        app.fake_share().sender(sender).recipient("client@example.test").file("plan.pdf", b"plan").create().await;
    (browser, share)
}

async fn english(browser: &Browser, path: &str) -> Page {
    browser.get_with(path, &[("Accept-Language", "en")]).await
}

async fn poll(browser: &Browser, id: i64, seen: &str) -> Page {
    let path = format!("/shares/{id}/live?seen={seen}");
    browser.get_with(&path, &[("HX-Request", "true"), ("Accept-Language", "en")]).await
}

/// The version the share page's poll carries.
fn seen_of(page: &Page) -> String {
    let url = page.attr("#share-live", "hx-get").expect("the share page polls");
    url.split_once("?seen=").expect("a version").1.to_owned()
}

async fn purge(app: &TestApp) {
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
}

async fn an_expired_share_reads_expired_unused_and_keeps_that_outcome_after_its_file_is_deleted(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    let (browser, share) = sender_with_share(&app).await;
    app.expire_share(share.id).await;
    let t = Lang::En.text();

    let expired = english(&browser, &format!("/shares/{}", share.id)).await;
    assert_eq!(expired.attr("#share-status [data-status]", "data-status").as_deref(), Some("expired"));
    assert_eq!(expired.texts("#share-status .status"), [t.dashboard.status_expired]);
    assert!(expired.texts("[data-file-deleted]").is_empty(), "the file is not deleted yet");

    purge(&app).await;
    let purged = english(&browser, &format!("/shares/{}", share.id)).await;
    assert_eq!(purged.attr("#share-status [data-status]", "data-status").as_deref(), Some("expired"));
    assert_eq!(purged.texts("#share-status [data-file-deleted]"), [Lang::En.text().dashboard.file_deleted]);
    assert!(!purged.body.contains(t.dashboard.status_deleted), "an expired share reads like a deleted one");
    let kinds: Vec<String> = purged
        .html()
        .select(&scraper::Selector::parse(".timeline li").unwrap())
        .map(|li| li.value().attr("data-kind").unwrap().to_owned())
        .collect();
    // The file was stored encrypted: its key goes first, then its bytes.
    assert_eq!(kinds, ["expired", "key_destroyed", "purged"]);
    let expiry = &purged.texts(".timeline li[data-kind=expired]")[0];
    assert!(expiry.ends_with(Lang::En.text().dashboard.event_expired), "{expiry}");
    assert!(purged.attr("#share-live", "hx-get").is_none(), "nothing changes any more, yet the page polls");

    let list = english(&browser, "/shares").await;
    assert_eq!(list.attr(".share-row", "data-status").as_deref(), Some("expired"));
    assert_eq!(list.texts(".share-row [data-file-deleted]").len(), 1);
}

async fn a_revoked_or_downloaded_share_keeps_its_own_outcome_and_records_no_expiry(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    let (browser, share) = sender_with_share(&app).await;
    let other = app.fake_share().sender(share.sender_id).recipient("b@example.test").file("b.txt", b"b").create().await;
    let page = english(&browser, &format!("/shares/{}", share.id)).await;
    let ended = browser.post_form(&format!("/shares/{}/revoke", share.id), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(ended.status, 303);
    execute(app.db(), sql!("UPDATE shares SET status = 'consumed', consumed_at = " now " WHERE id = $1"), other.id)
        .await;
    app.consumed_ago(other.id, 3 * 3600).await;
    app.expire_share(other.id).await;
    purge(&app).await;

    for (id, outcome) in [(share.id, "revoked"), (other.id, "downloaded")] {
        let after = english(&browser, &format!("/shares/{id}")).await;
        assert_eq!(after.attr("#share-status [data-status]", "data-status").as_deref(), Some(outcome));
        assert_eq!(after.texts("#share-status [data-file-deleted]").len(), 1, "{outcome}: the deletion is not said");
        assert!(after.attr("[data-kind=expired]", "data-kind").is_none(), "{outcome} recorded as an expiry");
    }
}

async fn repeated_events_are_one_line_with_their_count_and_an_empty_timeline_says_so(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (browser, share) = sender_with_share(&app).await;
    let fresh = english(&browser, &format!("/shares/{}", share.id)).await;
    assert_eq!(fresh.texts("[data-timeline-empty]"), [Lang::En.text().dashboard.timeline_empty]);
    assert!(fresh.texts(".timeline li").is_empty());

    let events = ShareEvents::new(app.db().clone());
    for kind in [
        EventKind::CodeSent,
        EventKind::CodeFailed,
        EventKind::CodeFailed,
        EventKind::CodeFailed,
        EventKind::CodeFailed,
        EventKind::CodeFailed,
        EventKind::CodeSent,
    ] {
        events.record(share.id, kind).await.unwrap();
    }
    let page = english(&browser, &format!("/shares/{}", share.id)).await;
    assert_eq!(page.texts(".timeline li").len(), 3, "{}", page.body);
    assert_eq!(page.attr(".timeline li[data-kind=code_failed]", "data-count").as_deref(), Some("5"));
    assert!(page.texts(".timeline li[data-kind=code_failed] .event-count")[0].starts_with("×5"));
    assert!(page.texts("[data-timeline-empty]").is_empty());
}

async fn a_new_link_is_on_the_timeline(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (browser, share) = sender_with_share(&app).await;
    let page = english(&browser, &format!("/shares/{}", share.id)).await;
    let headers = [("Sec-Fetch-Site", "same-origin"), ("Accept-Language", "en")];
    let renewed = browser
        .post_form_with(&format!("/shares/{}/link", share.id), &[("csrf_token", &page.csrf_token())], &headers)
        .await
        .follow(&browser, &headers)
        .await;
    assert_eq!(renewed.status, 200);
    let li = renewed.texts(".timeline li[data-kind=link_renewed]");
    assert_eq!(li.len(), 1, "{}", renewed.body);
    assert!(li[0].ends_with(Lang::En.text().dashboard.event_link_renewed), "{li:?}");
}

async fn the_poll_answers_no_change_until_something_changes_and_replaces_the_buttons_only_with_the_outcome(
    backend: Backend,
) {
    let app = TestApp::spawn(backend).await;
    let (browser, share) = sender_with_share(&app).await;
    let page = english(&browser, &format!("/shares/{}", share.id)).await;
    assert_eq!(page.attr("#share-status", "aria-live").as_deref(), Some("polite"));
    assert!(page.attr("#share-live #share-actions", "id").is_none(), "the buttons are inside the polled part");
    assert!(page.attr("#share-live [data-status]", "data-status").is_none(), "the status is inside the polled part");
    let seen = seen_of(&page);

    let unchanged = poll(&browser, share.id, &seen).await;
    assert_eq!(unchanged.status, 204, "{}", unchanged.body);

    // The recipient opens the link: the timeline changes, the outcome does not.
    assert_eq!(app.browser().open_link(&share.token).await.status, 200);
    let opened = poll(&browser, share.id, &seen).await;
    assert_eq!(opened.status, 200);
    assert_eq!(opened.attr("#share-live .timeline li", "data-kind").as_deref(), Some("opened"));
    assert_eq!(opened.attr("#share-status", "hx-swap-oob").as_deref(), Some("innerHTML"));
    assert!(opened.attr("#share-actions", "id").is_none(), "the buttons were replaced though the outcome stayed");
    assert_ne!(seen_of(&opened), seen);

    // The share is locked: the outcome changed, so the buttons change with it.
    execute(app.db(), sql!("UPDATE shares SET locked_at = " now " WHERE id = $1"), share.id).await;
    let locked = poll(&browser, share.id, &seen_of(&opened)).await;
    assert_eq!(locked.attr("#share-status [data-status]", "data-status").as_deref(), Some("locked"));
    assert_eq!(locked.attr("#share-actions", "hx-swap-oob").as_deref(), Some("true"));
    assert!(locked.attr("#share-actions form[action$='/unlock']", "action").is_some());
}

both_backends!(
    an_expired_share_reads_expired_unused_and_keeps_that_outcome_after_its_file_is_deleted,
    a_revoked_or_downloaded_share_keeps_its_own_outcome_and_records_no_expiry,
    repeated_events_are_one_line_with_their_count_and_an_empty_timeline_says_so,
    a_new_link_is_on_the_timeline,
    the_poll_answers_no_change_until_something_changes_and_replaces_the_buttons_only_with_the_outcome
);
