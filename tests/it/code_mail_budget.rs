//! A link's code-mail budget as its sender meets it: anyone holding the link and the recipient's
//! address can spend it, so the share's page says when it is spent and until when, and points at
//! the fresh link, which starts it again.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::{
    both_backends,
    support::{Backend, PASSWORD, Page, RECIPIENT, TestApp},
};

/// The notice's resume time, if the page shows the notice.
fn spent_until(page: &Page) -> Option<DateTime<Utc>> {
    let until = page.attr("[data-code-mails-spent]", "data-until")?;
    Some(DateTime::parse_from_rfc3339(&until).unwrap().with_timezone(&Utc))
}

async fn the_share_page_says_when_the_code_mails_are_spent_and_a_fresh_link_starts_them_again(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let dashboard = app.sign_in("sender@example.test", PASSWORD).await;
    let path = format!("/shares/{}", share.id);
    let before = dashboard.get_with(&path, &[("Accept-Language", "en")]).await;

    // Someone with the link and the address, in a new browser each time (no session limit).
    let started = Utc::now();
    for mailed in 1..=5 {
        app.browser().ask_for_code(&share.token, RECIPIENT).await;
        app.smtp.wait_for(mailed, Duration::from_secs(10)).await;
    }
    let spent = dashboard.get_with(&path, &[("Accept-Language", "en")]).await;
    let checked = Utc::now();
    let spent_ja = dashboard.get_with(&path, &[("Accept-Language", "ja")]).await;

    assert_eq!(spent_until(&before), None);
    let until = spent_until(&spent).expect("the page does not say the code mails are spent");
    // The hour's budget frees up an hour after the first of the five mails (the page rounds
    // to the second, the wait up to a whole one).
    let hour = chrono::Duration::seconds(3600);
    let second = chrono::Duration::seconds(1);
    assert!(
        until >= started + hour - second && until <= checked + hour + second + second,
        "{until}: {started}..{checked}"
    );
    let notice = spent.texts("[data-code-mails-spent]").concat();
    assert!(notice.contains("used up the code emails") && notice.contains("someone else"), "{notice}");
    assert_eq!(spent.attr("[data-code-mails-spent] a", "href").as_deref(), Some("#fresh-link"));
    assert_eq!(spent.attr("form#fresh-link", "action"), Some(format!("/shares/{}/link", share.id)));
    assert!(spent_ja.texts("[data-code-mails-spent]").concat().contains("上限に達した"), "{}", spent_ja.body);

    // An hour on, the budget has room again: a poll that showed the notice takes it away.
    let poll = spent.attr("#share-live", "hx-get").unwrap();
    app.age_rate_limits(3601).await;
    let polled = dashboard.get_with(&poll, &[("HX-Request", "true"), ("Accept-Language", "en")]).await;
    assert_eq!(polled.status, 200, "the poll saw no change");
    assert!(polled.html().select(&scraper::Selector::parse("#share-live").unwrap()).next().is_some());
    assert_eq!(spent_until(&polled), None);
}

async fn a_fresh_link_takes_the_spent_notice_away(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    for mailed in 1..=5 {
        app.browser().ask_for_code(&share.token, RECIPIENT).await;
        app.smtp.wait_for(mailed, Duration::from_secs(10)).await;
    }
    let dashboard = app.sign_in("sender@example.test", PASSWORD).await;
    let path = format!("/shares/{}", share.id);
    let spent = dashboard.get(&path).await;
    assert!(spent_until(&spent).is_some(), "{}", spent.body);

    let renewed = dashboard.post_form(&format!("{path}/link"), &[("csrf_token", &spent.csrf_token())]).await;
    let renewed = renewed.follow(&dashboard, &[]).await;
    let after = dashboard.get(&path).await;

    assert_eq!(renewed.status, 200, "{}", renewed.body);
    assert_eq!(spent_until(&renewed), None);
    assert_eq!(spent_until(&after), None);
}

both_backends!(
    the_share_page_says_when_the_code_mails_are_spent_and_a_fresh_link_starts_them_again,
    a_fresh_link_takes_the_spent_notice_away
);
