//! A throttled sign-in also says when the wait ends, as a time of day in the reader's zone (Japan
//! time on Japanese pages, UTC on English ones without an account), rounded up to the minute.

use chrono::{Duration, Timelike, Utc};
use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, Page, TestApp},
};

async fn throttled_sign_in(app: &TestApp, lang: Lang) -> Page {
    let browser = app.browser();
    let header = [("Accept-Language", lang.code())];
    let csrf = browser.get_with("/login", &header).await.csrf_token();
    let fields = [("csrf_token", csrf.as_str()), ("email", "owner@example.test"), ("password", "a wrong guess")];
    for _ in 0..30 {
        let page = browser.post_form_with("/login", &fields, &header).await;
        if page.status == 429 {
            return page;
        }
    }
    panic!("thirty wrong passwords in a row were never slowed down");
}

async fn a_throttled_sign_in_says_the_time_the_wait_ends(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("owner@example.test", "Owner", PASSWORD).await;
    for (lang, offset_hours, zone) in [(Lang::En, 0, " UTC"), (Lang::Ja, 9, "（日本時間）")] {
        let asked_at = Utc::now();
        let page = throttled_sign_in(&app, lang).await;

        let seconds: i64 = page.header("retry-after").expect("a Retry-After").parse().unwrap();
        let [until] = page.texts("[data-wait-until]").try_into().unwrap_or_else(|_| panic!("{}", page.body));
        // The end of the wait, rounded up to the minute, from when the refusal was asked for to
        // when it came (a few minutes at most on a busy machine).
        let earliest = asked_at + Duration::seconds(seconds) + Duration::hours(offset_hours);
        let said_at = |t: chrono::DateTime<Utc>| {
            lang.text().errors.too_many_until.replace("{time}", &format!("{:02}:{:02}{zone}", t.hour(), t.minute()))
        };
        let fits = (0..=3).map(|m| said_at(earliest + Duration::minutes(m))).any(|said| said == until);
        assert!(fits, "{until:?} is not the end of a {seconds} s wait from {asked_at}");
        assert_eq!(page.texts("[data-wait]").len(), 1, "the minutes are still said");
    }
    app.stop().await;
}

both_backends!(a_throttled_sign_in_says_the_time_the_wait_ends);
