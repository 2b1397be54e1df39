//! What a mere visit may leave behind: no session row for a page with a form (its CSRF token is a
//! signed double-submit cookie), one timeline entry however often a link is opened or a download
//! refused, and a daily cap on the fresh links a share's recipient is mailed.

use std::time::Duration;

use crate::{
    both_backends,
    support::{
        Backend, TestApp, count,
        oidc::{Mode, app_with_provider},
    },
};

use crate::support::RECIPIENT;

async fn sessions(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM sessions WHERE id > $1", 0).await
}

async fn events_of_kind(app: &TestApp, share_id: i64, kind: &str) -> usize {
    app.state.events.list(share_id).await.unwrap().into_iter().filter(|e| e.kind.code() == kind).count()
}

async fn showing_the_sign_in_form_or_a_share_link_stores_no_session(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &[]).await;
    let share = app.create_share().await;

    for _ in 0..5 {
        assert_eq!(app.browser().get("/login").await.status, 200);
        assert_eq!(app.browser().get(&format!("/s/{}", share.token)).await.status, 200);
        assert_eq!(app.browser().get("/login/sso").await.status, 303, "single sign-on did not start");
    }

    assert_eq!(sessions(&app).await, 0, "a page view or a started single sign-on made a session row");
    assert_eq!(count(app.db(), "SELECT count(*) FROM sso_logins WHERE session_id > $1", 0).await, 0);
}

async fn a_form_posted_to_a_dead_link_starts_no_session(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.landed_browser(&share.token).await;
    let dead = format!("/s/{}", "0".repeat(64));

    let email = browser.post_form(&format!("{dead}/email"), &[("csrf_token", &csrf), ("email", RECIPIENT)]).await;
    let resend = browser.post_form(&format!("{dead}/code/new"), &[("csrf_token", &csrf)]).await;
    let code = browser.post_form(&format!("{dead}/code"), &[("csrf_token", &csrf), ("code", "123456")]).await;

    for (step, page) in [("email", &email), ("resend", &resend), ("code", &code)] {
        assert_eq!(page.status, 404, "{step}: {}", page.body);
    }
    assert_eq!(sessions(&app).await, 0, "a post to a dead link made a session row");
}

async fn an_anonymous_form_works_with_its_own_cookie_and_only_with_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (visitor, other) = (app.browser(), app.browser());
    let path = format!("/s/{}", share.token);
    let token = visitor.get(&path).await.csrf_token();
    let others_token = other.get(&path).await.csrf_token();

    let forged =
        visitor.post_form(&format!("{path}/email"), &[("csrf_token", &others_token), ("email", RECIPIENT)]).await;
    let cookieless =
        app.browser().post_form(&format!("{path}/email"), &[("csrf_token", &token), ("email", RECIPIENT)]).await;
    let own = visitor.post_form(&format!("{path}/email"), &[("csrf_token", &token), ("email", RECIPIENT)]).await;

    assert_eq!(forged.status, 403, "another browser's form token was accepted");
    assert_eq!(cookieless.status, 403, "a form token was accepted without its cookie");
    assert_eq!(own.status, 303, "{}", own.body);
    assert_eq!(sessions(&app).await, 1, "the address submission must start the one session");
    assert!(app.smtp.wait_for(1, Duration::from_secs(10)).await[0].code().is_some());
}

async fn repeated_visits_and_refused_downloads_are_one_timeline_entry_an_hour(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let landing = browser.open_link(&share.token).await;

    for _ in 0..10 {
        browser.open_link(&share.token).await;
        let refused =
            browser.post_form(&format!("/s/{}/download", share.token), &[("csrf_token", &landing.csrf_token())]).await;
        assert_eq!(refused.status, 403);
    }

    assert_eq!(events_of_kind(&app, share.id, "opened").await, 1);
    assert_eq!(events_of_kind(&app, share.id, "refused").await, 1);
    app.shift_back("share_events", &["at"], 3601, &format!("share_id = {}", share.id)).await;
    browser.open_link(&share.token).await;
    assert_eq!(events_of_kind(&app, share.id, "opened").await, 2, "an hour later a visit is a new entry");
}

async fn only_a_browser_navigating_to_the_link_is_an_open_not_a_previewer_or_a_script(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let path = format!("/s/{}", share.token);
    let slack = [("User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"), ("Accept", "*/*")];
    let fetched = [("Sec-Fetch-Dest", "empty"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Site", "same-origin")];

    for headers in [&[][..], &slack[..], &fetched[..]] {
        assert_eq!(app.browser().get_with(&path, headers).await.status, 200, "{headers:?}");
    }
    assert_eq!(events_of_kind(&app, share.id, "opened").await, 0, "a preview or a fetch was taken for an open");

    assert_eq!(app.browser().open_link(&share.token).await.status, 200);
    assert_eq!(events_of_kind(&app, share.id, "opened").await, 1);
}

async fn a_share_is_sent_at_most_five_fresh_links_a_day(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("sender@example.test", "Sender Sato", "correct horse battery").await;
    let share = app.fake_share().sender(sender).file("a.txt", b"a").create().await;
    let dashboard = app.sign_in("sender@example.test", "correct horse battery").await;
    let csrf = dashboard.get(&format!("/shares/{}", share.id)).await.csrf_token();
    let mut statuses = Vec::new();

    for _ in 0..6 {
        let mut answer = dashboard.post_form(&format!("/shares/{}/link", share.id), &[("csrf_token", &csrf)]).await;
        if answer.status == 303 {
            answer = answer.follow(&dashboard, &[]).await;
        }
        statuses.push(answer.status.as_u16());
        if answer.status == 429 {
            let retry: u64 = answer.header("retry-after").unwrap().parse().unwrap();
            assert!((1..=86_400).contains(&retry), "{retry}");
        }
    }

    assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    let mails = app.smtp.wait_for(5, Duration::from_secs(10)).await;
    assert_eq!(mails.iter().filter(|m| m.to == [RECIPIENT]).count(), 5);
}

both_backends!(
    showing_the_sign_in_form_or_a_share_link_stores_no_session,
    a_form_posted_to_a_dead_link_starts_no_session,
    an_anonymous_form_works_with_its_own_cookie_and_only_with_it,
    repeated_visits_and_refused_downloads_are_one_timeline_entry_an_hour,
    only_a_browser_navigating_to_the_link_is_an_open_not_a_previewer_or_a_script,
    a_share_is_sent_at_most_five_fresh_links_a_day
);
