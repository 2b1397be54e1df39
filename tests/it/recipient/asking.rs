//! The recipient's address step: whatever is typed, the page and the time are the same, and a code
//! goes only to the registered address, in the browser's language.

use std::time::{Duration, Instant};

use crate::{
    both_backends,
    support::{Backend, Page, RECIPIENT, TestApp, count, event_kinds, without_csrf, without_csrf_and_typed},
};

async fn the_landing_page_says_who_sent_a_file_but_not_which(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let page = app.browser().get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Sender Sato"));
    assert!(!page.body.contains("report.txt"), "the landing page names the file");
    assert_eq!(page.attr("input[name=email]", "type").as_deref(), Some("email"));
    assert_eq!(page.attr("input[name=email]", "autocomplete").as_deref(), Some("email"));
    assert_eq!(page.attr("label[for=email]", "for").as_deref(), Some("email"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    let cookie = page.header("set-cookie").expect("a session starts");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
}

async fn a_wrong_address_gets_the_same_answer_and_no_mail(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let wrong = app.browser().ask_for_code(&share.token, "intruder@example.test").await;
    let right = app.browser().ask_for_code(&share.token, "  RECIPIENT@example.TEST ").await;
    assert_eq!(wrong.status, right.status);
    // Each page shows back what was typed, and nothing else differs.
    assert_eq!(wrong.texts(".typed-address"), ["intruder@example.test"]);
    assert_eq!(right.texts(".typed-address"), ["RECIPIENT@example.TEST"]);
    assert_eq!(without_csrf_and_typed(&wrong.body), without_csrf_and_typed(&right.body));

    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    // Each submission made a challenge; only a mailed one ever sends anything.
    assert_eq!(challenges(&app, share.id, true).await, 1, "exactly one mail, for the right address");
    assert_eq!(challenges(&app, share.id, false).await, 1);
    assert_eq!(mails[0].to, [RECIPIENT]);
    let code = mails[0].code().expect("six digits");
    assert_eq!(code.len(), 6);
    assert!(!mails[0].text().contains("report.txt"), "the code mail names the file");
}

async fn the_code_only_ever_goes_to_the_registered_address(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    for typed in [
        "intruder@example.test",
        "recipient@example.test.evil",
        "recipient@example.test, x@evil.test",
        "",
        "not an address",
    ] {
        app.browser().ask_for_code(&share.token, typed).await;
    }
    assert_eq!(challenges(&app, share.id, false).await, 5, "a submission made no challenge");
    assert_eq!(challenges(&app, share.id, true).await, 0, "a code was sent for a typed address");
    assert!(app.smtp.messages().is_empty(), "{:?}", app.smtp.messages().iter().map(|m| &m.to).collect::<Vec<_>>());
}

async fn after_any_address_the_session_sees_the_same_pages_whether_or_not_it_matched(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (right, wrong) = (app.browser(), app.browser());
    let same = |a: &Page, b: &Page, what: &str| {
        let (a_page, b_page) = (without_csrf_and_typed(&a.body), without_csrf_and_typed(&b.body));
        assert_eq!((a.status, a_page), (b.status, b_page), "{what} reveals the match");
    };

    let (r, w) = (
        right.ask_for_code(&share.token, RECIPIENT).await,
        wrong.ask_for_code(&share.token, "someone@example.test").await,
    );
    same(&r, &w, "the answer");
    let code = app.smtp.code_for(RECIPIENT).await;
    let (r, w) = (right.get(&format!("/s/{}", share.token)).await, wrong.get(&format!("/s/{}", share.token)).await);
    same(&r, &w, "a reload");
    assert_eq!(r.attr("#step", "data-step").as_deref(), Some("code"));
    let guess = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
    for try_number in 1..=6 {
        let r = right.submit_code(&share.token, &r.csrf_token(), &guess).await;
        let w = wrong.submit_code(&share.token, &w.csrf_token(), &guess).await;
        same(&r, &w, &format!("the answer to wrong code {try_number}"));
        let (r, w) = (right.follow(&share.token, r).await, wrong.follow(&share.token, w).await);
        same(&r, &w, &format!("the page after wrong code {try_number}"));
    }
    let r = right.resend_code(&share.token, &r.csrf_token()).await;
    let w = wrong.resend_code(&share.token, &w.csrf_token()).await;
    same(&r, &w, "sending a new code");

    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    assert!(mails.iter().all(|m| m.to == [RECIPIENT]), "a mail went to a typed address");
}

async fn matched_and_unmatched_addresses_take_indistinguishable_time(backend: Backend) {
    let _quiet = crate::support::timing_turn().await;
    let app = TestApp::spawn_with(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    app.smtp.set_delay(Duration::from_millis(300));
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for round in 0..12 {
        let share = app.create_share().await;
        let client = format!("198.51.100.{round}");
        for (address, samples) in [(RECIPIENT, &mut matched), ("someone@example.test", &mut unmatched)] {
            let browser = app.browser();
            let landing = browser.get_with(&format!("/s/{}", share.token), &[("X-Forwarded-For", &client)]).await;
            let started = Instant::now();
            let page = browser
                .post_form_with(
                    &format!("/s/{}/email", share.token),
                    &[("csrf_token", &landing.csrf_token()), ("email", address)],
                    &[("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", &client)],
                )
                .await;
            samples.push(started.elapsed());
            assert_eq!(page.status, 303);
        }
    }
    matched.sort();
    unmatched.sort();
    let (m, u) = (matched[matched.len() / 2], unmatched[unmatched.len() / 2]);
    println!("{backend:?} median answer: matched {m:?}, unmatched {u:?}");
    let difference = m.abs_diff(u);
    assert!(difference < Duration::from_millis(60), "matched {m:?} vs unmatched {u:?}: the answer reveals the match");
}

async fn the_code_mail_speaks_the_recipients_browser_language(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let landing = browser.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "ja")]).await;
    browser
        .post_form_with(
            &format!("/s/{}/email", share.token),
            &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)],
            &[("Sec-Fetch-Site", "same-origin"), ("Accept-Language", "ja")],
        )
        .await;
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.subject(), "watasu 確認コードのお知らせ");
    assert!(mail.text().contains("10分"));
}

async fn a_code_mail_that_cannot_be_sent_is_retried_then_shown_to_the_sender_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let normal = app.browser().ask_for_code(&share.token, RECIPIENT).await;
    app.smtp.wait_for(1, Duration::from_secs(10)).await;
    app.smtp.set_refusing(true);
    let during_outage = app.browser().ask_for_code(&share.token, RECIPIENT).await;
    assert_eq!(during_outage.status, normal.status);
    assert_eq!(without_csrf(&during_outage.body), without_csrf(&normal.body), "the page reveals the failed mail");
    // One attempt and three quick retries (1 s, 3 s, 8 s), then the sender's timeline says so.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !event_kinds(&app, share.id).await.iter().any(|k| k == "code_mail_failed") {
        assert!(Instant::now() < deadline, "no code_mail_failed event: {:?}", event_kinds(&app, share.id).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(app.smtp.messages().len(), 1, "a refused mail was counted as delivered");
}

async fn htmx_requests_get_the_next_step_as_a_fragment(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    let fragment = browser
        .post_form_with(
            &format!("/s/{}/email", share.token),
            &[("email", RECIPIENT)],
            &[("HX-Request", "true"), ("X-CSRF-Token", &landing.csrf_token()), ("Sec-Fetch-Site", "same-origin")],
        )
        .await;
    assert_eq!(fragment.status, 200);
    assert!(!fragment.body.contains("<html"), "a whole page came back");
    assert!(fragment.body.trim_start().starts_with("<section id=\"step\""), "{}", fragment.body);
    assert_eq!(fragment.attr("input[name=code]", "autocomplete").as_deref(), Some("one-time-code"));
    assert_eq!(fragment.attr("input[name=code]", "inputmode").as_deref(), Some("numeric"));
    assert_eq!(fragment.attr("input[name=code]", "pattern").as_deref(), Some("[0-9]{6}"));
}

both_backends!(
    the_landing_page_says_who_sent_a_file_but_not_which,
    a_wrong_address_gets_the_same_answer_and_no_mail,
    the_code_only_ever_goes_to_the_registered_address,
    after_any_address_the_session_sees_the_same_pages_whether_or_not_it_matched,
    matched_and_unmatched_addresses_take_indistinguishable_time,
    the_code_mail_speaks_the_recipients_browser_language,
    a_code_mail_that_cannot_be_sent_is_retried_then_shown_to_the_sender_only,
    htmx_requests_get_the_next_step_as_a_fragment,
);

/// The share's challenges whose code was mailed (`mailed`) or withheld.
async fn challenges(app: &TestApp, share_id: i64, mailed: bool) -> i64 {
    let sql = if mailed {
        "SELECT count(*) FROM otp_challenges WHERE share_id = $1 AND mailed"
    } else {
        "SELECT count(*) FROM otp_challenges WHERE share_id = $1 AND NOT mailed"
    };
    count(app.db(), sql, share_id).await
}
