//! Times in the reader's zone: a sender chooses one on the account page (or their browser's is
//! adopted at sign-in), every time on their pages and in their receipt uses and names it, and
//! without one the language decides (Japan time in Japanese, UTC in English).

use std::time::Duration;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp, count, http::Browser},
};
use watasu::db::Sql;

const ZONE_STORED: &str = "SELECT count(*) FROM users WHERE id = $1 AND time_zone IS NOT NULL";

/// Saves `zone` on the account page the way the form does; returns the page after the redirect.
async fn choose_zone(browser: &Browser, zone: &str) -> crate::support::http::Page {
    let account = browser.get("/account").await;
    let saved =
        browser.post_form("/account/time-zone", &[("csrf_token", &account.csrf_token()), ("time_zone", zone)]).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(saved.header("location"), Some("/account?saved=time-zone#time-zone"));
    browser.get("/account?saved=time-zone").await
}

/// The times of a share's page: its created and expiry facts.
async fn share_times(browser: &Browser, share_id: i64, lang: &str) -> Vec<String> {
    let page = browser.get_with(&format!("/shares/{share_id}?lang={lang}"), &[]).await;
    assert_eq!(page.status, 200);
    page.texts("dl.facts dd").into_iter().filter(|t| t.contains(':')).collect()
}

async fn a_chosen_zone_is_used_and_named_on_the_senders_pages(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let id = app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let share = app.fake_share().sender(id).recipient("r@example.test").file("a.txt", b"x").create().await;
    let english = share_times(&sender, share.id, "en").await;
    assert!(!english.is_empty() && english.iter().all(|t| t.ends_with(" UTC")), "{english:?}");
    let japanese = share_times(&sender, share.id, "ja").await;
    assert!(japanese.iter().all(|t| t.ends_with("（日本時間）")), "{japanese:?}");

    let account = choose_zone(&sender, "America/New_York").await;
    assert_eq!(account.attr("#time_zone option[selected]", "value"), None, "the option's value is its text");
    assert_eq!(account.texts("#time_zone option[selected]"), ["America/New_York"]);
    assert_eq!(account.texts("#time-zone [role=status]").len(), 1, "the save is not reported");
    assert!(account.texts("#time-zone [role=status]")[0].contains("America/New_York"));
    for lang in ["en", "ja"] {
        let times = share_times(&sender, share.id, lang).await;
        assert!(!times.is_empty() && times.iter().all(|t| t.contains("America/New_York")), "{lang}: {times:?}");
    }
    let list = sender.get("/shares?lang=en").await;
    assert!(list.texts(".share-meta")[0].contains("America/New_York"), "{:?}", list.texts(".share-meta"));

    choose_zone(&sender, "").await;
    let english = share_times(&sender, share.id, "en").await;
    assert!(english.iter().all(|t| t.ends_with(" UTC")), "back to the language's default: {english:?}");
}

async fn a_zone_outside_the_list_is_refused_on_its_field(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let id = app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let account = sender.get("/account").await;
    let page = sender
        .post_form("/account/time-zone", &[("csrf_token", &account.csrf_token()), ("time_zone", "Mars/Olympus")])
        .await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("#time_zone", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(page.attr("#time_zone", "aria-describedby").as_deref(), Some("time-zone-hint time-zone-error"));
    assert_eq!(page.texts("#time-zone-error[role=alert]").len(), 1);
    assert_eq!(count(app.db(), ZONE_STORED, id).await, 0);
}

async fn the_browsers_zone_is_adopted_at_sign_in_but_never_replaces_a_choice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sign_in_from = async |zone: &str| {
        let browser = app.browser();
        let form = browser.get("/login").await;
        let token = form.csrf_token();
        let fields =
            [("csrf_token", token.as_str()), ("email", "s@example.test"), ("password", PASSWORD), ("time_zone", zone)];
        assert_eq!(browser.post_form("/login", &fields).await.status, 303);
        browser
    };
    let first = sign_in_from("Europe/Paris").await;
    let account = first.get("/account").await;
    assert_eq!(account.texts("#time_zone option[selected]"), ["Europe/Paris"]);
    assert!(account.attr("#time_zone", "data-browser-time-zone").is_none(), "a zone is stored: nothing to offer");
    let later = sign_in_from("Asia/Tokyo").await;
    assert_eq!(later.get("/account").await.texts("#time_zone option[selected]"), ["Europe/Paris"]);

    // Without a zone from the browser (no JavaScript) nothing is stored.
    let other = app.create_sender_with_password("n@example.test", "Noscript", PASSWORD).await;
    let plain = app.sign_in("n@example.test", PASSWORD).await;
    let page = plain.get("/account").await;
    assert_eq!(page.attr("#time_zone option[selected]", "value").as_deref(), Some(""));
    assert!(page.attr("#time_zone", "data-browser-time-zone").is_some(), "the script is not asked to offer one");
    assert_eq!(count(app.db(), ZONE_STORED, other).await, 0);
}

async fn the_download_receipt_says_the_senders_zone(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    crate::support::execute(
        app.db(),
        Sql::same("UPDATE users SET time_zone = 'Asia/Kolkata' WHERE id = $1"),
        share.sender_id,
    )
    .await;
    let (browser, csrf) = app.granted_browser(&share).await;
    let response = browser.download(&share.token, &csrf).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert!(mail.to[0].starts_with("sender-"), "{:?}", mail.to);
    let text = mail.text();
    assert_eq!(text.matches("Asia/Kolkata").count(), 2, "the start and the end name the zone: {text}");
}

both_backends!(
    a_chosen_zone_is_used_and_named_on_the_senders_pages,
    a_zone_outside_the_list_is_refused_on_its_field,
    the_browsers_zone_is_adopted_at_sign_in_but_never_replaces_a_choice,
    the_download_receipt_says_the_senders_zone
);
