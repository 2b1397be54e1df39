//! A share's timeline reads by day: a heading per day in the reader's zone, times of day only, the
//! zone said once; each new link and each link mail says which link it was.

use std::time::Duration;

use watasu::{
    i18n::Lang,
    share::{EventKind, ShareEvents},
};

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp},
};

const EN: &[(&str, &str)] = &[("Accept-Language", "en"), ("Sec-Fetch-Site", "same-origin")];

async fn the_timeline_has_a_heading_per_day_and_names_the_zone_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("days@example.test", "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).create().await;
    let events = ShareEvents::new(app.db().clone());
    for kind in [EventKind::Opened, EventKind::CodeFailed, EventKind::CodeFailed] {
        events.record(share.id, kind).await.unwrap();
    }
    // The visit was two days ago; the wrong codes are now.
    app.set_ago("share_events", &["at"], 2 * 24 * 3600, "kind = 'opened'").await;
    let browser = app.sign_in("days@example.test", PASSWORD).await;

    let page = browser.get_with(&format!("/shares/{}", share.id), EN).await;

    assert_eq!(page.texts(".timeline-day").len(), 2, "{}", page.body);
    assert_eq!(page.texts("[data-timeline-zone]"), ["Times are in UTC."]);
    let times = page.texts(".timeline .event-time");
    assert_eq!(times.len(), 2);
    assert!(times.iter().all(|t| t.len() == 5 && t.as_bytes()[2] == b':'), "{times:?}");
    let timeline = page.texts(".timeline").concat();
    assert!(!timeline.contains("UTC"), "the zone is said on each line: {timeline}");
    assert_eq!(page.attr(".timeline li[data-kind=code_failed]", "data-count").as_deref(), Some("2"));
}

async fn each_new_link_and_its_mail_say_which_link_they_are(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("links@example.test", "Sender Sato", PASSWORD).await;
    // Made without a mail: the first link has none, so the first mail listed carries link 2.
    let share = app.fake_share().sender(sender).create().await;
    let browser = app.sign_in("links@example.test", PASSWORD).await;
    let path = format!("/shares/{}", share.id);
    for _ in 0..2 {
        let page = browser.get_with(&path, EN).await;
        let answer = browser.post_form_with(&format!("{path}/link"), &[("csrf_token", &page.csrf_token())], EN).await;
        assert_eq!(answer.status, 303, "{}", answer.body);
    }
    app.smtp.wait_for(2, Duration::from_secs(10)).await;

    let page = browser.get_with(&path, EN).await;

    let t = Lang::En.text();
    assert_eq!(page.texts(".timeline li[data-kind=link_renewed] .link-label"), ["new link (2)", "new link (3)"]);
    assert_eq!(page.texts(".mail-state [data-link-label]"), ["new link (2)", "new link (3)"]);
    let renewed = page.texts(".timeline li[data-kind=link_renewed]");
    assert!(renewed.iter().all(|li| li.ends_with(t.dashboard.event_link_renewed)), "{renewed:?}");
}

both_backends!(
    the_timeline_has_a_heading_per_day_and_names_the_zone_once,
    each_new_link_and_its_mail_say_which_link_they_are,
);
