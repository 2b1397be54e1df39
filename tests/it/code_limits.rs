//! Limits on asking for codes, as an outsider meets them: each session and client is limited by
//! its own requests, the share only by the code mails really sent, refused requests count nothing,
//! and a fresh link starts afresh.

use std::time::{Duration, Instant};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, TestShare, count, event_kinds, execute, without_csrf},
};
use watasu::sql;

async fn a_stranger_with_the_link_uses_up_only_their_own_code_requests(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let stranger = app.browser();
    for attempt in 1..=3 {
        let page = stranger.ask_for_code(&share.token, "typo@example.test").await;
        assert_eq!(page.status, 200, "attempt {attempt} was refused");
    }
    let code_step = stranger.open_link(&share.token).await;
    let blocked = stranger.use_other_address(&share.token, &code_step.csrf_token()).await;
    let stale_form = [("csrf_token", code_step.csrf_token()), ("email", RECIPIENT.to_owned())];
    let stale_form: Vec<(&str, &str)> = stale_form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = stranger.post_form(&format!("/s/{}/email", share.token), &stale_form).await;

    let recipient = app.browser().ask_for_code(&share.token, RECIPIENT).await;

    assert_eq!(blocked.attr("#step", "data-step").as_deref(), Some("blocked"), "{}", blocked.body);
    assert!(blocked.texts("input[name=email]").is_empty(), "the blocked step still asks for an address");
    assert_eq!(refused.status, 303, "a refused request is the step page, not an error");
    assert_eq!(challenges(&app, &share).await, 4, "the refused request made a code");
    assert_eq!(recipient.status, 200, "the stranger locked the recipient out");
    assert_eq!(recipient.attr("#step", "data-step").as_deref(), Some("code"));
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert!(mails[0].code().is_some());
    assert_eq!(mails.len(), 1, "the refused request sent a code");
}

/// Challenges (code requests) the share has had, mailed or not.
async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

async fn refused_code_requests_do_not_keep_the_window_closed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    for _ in 0..3 {
        assert_eq!(browser.ask_for_code(&share.token, "typo@example.test").await.status, 200);
    }
    app.age_rate_limits(540).await;
    for _ in 0..5 {
        browser.ask_for_code(&share.token, "typo@example.test").await;
    }
    let refused_made = challenges(&app, &share).await;

    app.age_rate_limits(61).await;
    let after_the_window = browser.ask_for_code(&share.token, RECIPIENT).await;

    assert_eq!(refused_made, 3, "a refused request made a code");
    assert_eq!(after_the_window.status, 200);
    assert_eq!(challenges(&app, &share).await, 4, "refused requests extended the window");
}

async fn an_office_behind_one_address_meets_the_client_limit_only_far_beyond_normal_use(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let share = app.create_share().await;
    let ask_from = |client: &'static str| {
        let (browser, token) = (app.browser(), share.token.clone());
        async move {
            let headers = [("X-Forwarded-For", client)];
            let landing = browser.get_with(&format!("/s/{token}"), &headers).await;
            let form = [("csrf_token", landing.csrf_token()), ("email", "colleague@example.test".to_owned())];
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let answer = browser
                .post_form_with(&format!("/s/{token}/email"), &form, &[("Sec-Fetch-Site", "same-origin"), headers[0]])
                .await;
            assert_eq!(answer.status, 303, "{}", answer.body);
            browser.get_with(&format!("/s/{token}"), &headers).await.attr("#step", "data-step").unwrap_or_default()
        }
    };
    // A large office: 200 colleagues' browsers behind one address within the hour.
    for colleague in 0..200 {
        assert_eq!(ask_from("198.51.100.7").await, "code", "colleague {colleague} was refused");
    }

    let one_too_many = ask_from("198.51.100.7").await;
    let elsewhere = ask_from("198.51.100.8").await;

    assert_eq!(one_too_many, "blocked");
    assert_eq!(elsewhere, "code");
}

async fn a_locked_share_tells_the_recipient_to_ask_the_sender_and_an_unlock_starts_afresh(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", "correct horse battery").await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let recipient = app.browser();
    for _ in 0..3 {
        assert_eq!(recipient.ask_for_code(&share.token, "typo@example.test").await.status, 200);
    }
    execute(app.db(), sql!("UPDATE shares SET locked_at = " now ", wrong_codes = 15 WHERE id = $1"), share.id).await;

    let locked = recipient.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    let dashboard = app.sign_in("sender@example.test", "correct horse battery").await;
    let page = dashboard.get(&format!("/shares/{}", share.id)).await;
    let unlocked =
        dashboard.post_form(&format!("/shares/{}/unlock", share.id), &[("csrf_token", &page.csrf_token())]).await;
    let after = recipient.ask_for_code(&share.token, RECIPIENT).await;

    // The lock does not pass with time, so the answer promises no wait; it says who can lift it.
    assert_eq!(locked.status, 403);
    assert!(locked.header("retry-after").is_none());
    assert!(locked.body.contains("Ask the person who sent it"), "{}", locked.body);
    assert_eq!(unlocked.status, 303);
    assert_eq!(after.status, 200, "the unlock kept the old link's code requests");
    assert!(app.smtp.wait_for(1, Duration::from_secs(10)).await.iter().any(|m| m.code().is_some()));
}

async fn code_mails_per_share_are_capped_without_changing_any_answer_and_a_new_link_starts_afresh(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", "correct horse battery").await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let mut answers = Vec::new();
    for mailed in 1..=6 {
        answers.push(app.browser().ask_for_code(&share.token, RECIPIENT).await);
        if mailed <= 5 {
            app.smtp.wait_for(mailed, Duration::from_secs(10)).await;
        }
    }
    wait_for_event(&app, share.id, "code_mail_failed").await;
    assert_eq!(app.smtp.messages().len(), 5, "the sixth code mail within the hour was sent");
    for answer in &answers[1..] {
        assert_eq!((answer.status, without_csrf(&answer.body)), (answers[0].status, without_csrf(&answers[0].body)));
    }

    let dashboard = app.sign_in("sender@example.test", "correct horse battery").await;
    let page = dashboard.get(&format!("/shares/{}", share.id)).await;
    let renewed =
        dashboard.post_form(&format!("/shares/{}/link", share.id), &[("csrf_token", &page.csrf_token())]).await;
    let renewed = renewed.follow(&dashboard, &[]).await;
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    let link_mail = app.smtp.wait_for(6, Duration::from_secs(10)).await.pop().unwrap();
    let token = link_mail.text().split("/s/").nth(1).unwrap()[..64].to_owned();
    let fresh = TestShare { token, ..share };
    app.browser().ask_for_code(&fresh.token, RECIPIENT).await;

    let mails = app.smtp.wait_for(7, Duration::from_secs(10)).await;
    assert!(mails[6].code().is_some(), "no code mail after the new link");
}

both_backends!(
    a_stranger_with_the_link_uses_up_only_their_own_code_requests,
    refused_code_requests_do_not_keep_the_window_closed,
    an_office_behind_one_address_meets_the_client_limit_only_far_beyond_normal_use,
    a_locked_share_tells_the_recipient_to_ask_the_sender_and_an_unlock_starts_afresh,
    code_mails_per_share_are_capped_without_changing_any_answer_and_a_new_link_starts_afresh
);

async fn wait_for_event(app: &TestApp, share_id: i64, kind: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !event_kinds(app, share_id).await.iter().any(|k| k == kind) {
        assert!(Instant::now() < deadline, "no {kind} event: {:?}", event_kinds(app, share_id).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
