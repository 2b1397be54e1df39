//! "Send a fresh link" is a post/redirect/get: the link is shown once on the share page it leads
//! to, and reloading that page makes no other link and sends no other mail.

use std::time::Duration;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, RECIPIENT, TestApp, count},
};

const EN: &[(&str, &str)] = &[("Accept-Language", "en")];

async fn reloading_the_page_after_a_fresh_link_shows_the_same_link_and_sends_nothing_more(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let dashboard = app.sign_in("sender@example.test", PASSWORD).await;
    let path = format!("/shares/{}", share.id);
    let page = dashboard.get(&path).await;

    let answer = dashboard.post_form(&format!("{path}/link"), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    assert_eq!(answer.header("location"), Some(format!("{path}?done=renewed").as_str()));
    let shown = answer.follow(&dashboard, EN).await;
    let reloaded = dashboard.get_with(&format!("{path}?done=renewed"), EN).await;

    let link = shown.attr("#share-link", "value").expect("the fresh link is shown");
    assert_eq!(reloaded.attr("#share-link", "value"), Some(link.clone()), "a reload made another link");
    // The link's mail is queued before the answer: the outbox already holds every mail for the share.
    let queued = count(app.db(), "SELECT count(*) FROM mail_outbox WHERE share_id = $1", share.id).await;
    assert_eq!(queued, 1, "a reload queued another mail");
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert!(mails[0].to == [RECIPIENT] && mails[0].text().contains(&link));
    assert_eq!(reloaded.texts(".timeline li[data-kind=link_renewed]").len(), 1);
    assert_eq!(app.browser().get(link.strip_prefix(&app.base).unwrap()).await.status, 200);
}

async fn once_its_cookie_is_gone_the_page_says_where_the_fresh_link_went(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let dashboard = app.sign_in("sender@example.test", PASSWORD).await;
    let path = format!("/shares/{}", share.id);
    let page = dashboard.get(&path).await;
    let answer = dashboard.post_form(&format!("{path}/link"), &[("csrf_token", &page.csrf_token())]).await;
    let location = answer.header("location").unwrap().to_owned();

    // Another browser of the same sender (the cookie stays with the one that asked).
    let elsewhere = app.sign_in("sender@example.test", PASSWORD).await;
    let later = elsewhere.get_with(&location, EN).await;

    assert_eq!(later.status, 200);
    assert_eq!(later.attr("#share-link", "value"), None);
    assert_eq!(later.texts("[data-notice]"), [Lang::En.text().dashboard.fresh_link_gone]);
}

both_backends!(
    reloading_the_page_after_a_fresh_link_shows_the_same_link_and_sends_nothing_more,
    once_its_cookie_is_gone_the_page_says_where_the_fresh_link_went
);
