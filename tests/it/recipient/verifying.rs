//! The recipient's code step: a right code starts a new session, wrong codes end the challenge, and
//! nothing sent on the old session downloads meanwhile.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, count},
};

async fn a_right_code_changes_the_session_id_and_the_old_cookie_has_no_grant(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let old_cookie = browser.cookie("watasu_session").unwrap();
    let code = app.smtp.code_for(RECIPIENT).await;
    browser.submit_code(&share.token, &code_step.csrf_token(), &code).await;
    let new_cookie = browser.cookie("watasu_session").unwrap();
    assert_ne!(old_cookie, new_cookie);

    let stale = app.browser();
    stale.set_cookie("watasu_session", &old_cookie);
    let page = stale.get(&format!("/s/{}", share.token)).await;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("email"), "the old cookie still has the grant");
    assert!(app.state.sessions.load(&old_cookie).await.unwrap().is_none(), "the old cookie still names a session");
}

async fn five_wrong_codes_kill_the_challenge_even_for_the_right_code(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for(RECIPIENT).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let csrf = page.csrf_token();
    for left in (0..5).rev() {
        let answer = browser.submit_code(&share.token, &csrf, wrong).await;
        assert_eq!(answer.status, 303);
        let answer = browser.follow(&share.token, answer).await;
        assert_eq!(answer.status, 200);
        if left > 0 {
            assert!(answer.texts("#code-status")[0].ends_with(&left.to_string()), "{:?}", answer.texts("#code-status"));
        }
    }
    let answer = browser.submit_code(&share.token, &csrf, &code).await;
    let answer = browser.follow(&share.token, answer).await;
    assert_eq!(answer.attr("#step", "data-step").as_deref(), Some("code"));
    assert!(answer.attr("#code-status", "aria-live").is_some());
    assert!(!answer.texts("#code-status")[0].is_empty(), "no error shown");
    let granted = count(app.db(), "SELECT count(*) FROM download_grants WHERE share_id = $1", share.id).await;
    assert_eq!(granted, 0);
}

async fn requests_in_flight_on_the_old_cookie_never_download_while_the_code_is_verified(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for round in 0..5 {
        let share = app.create_share().await;
        let browser = app.browser();
        let before = app.smtp.messages().len();
        let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
        let code = app.smtp.code_for_after(RECIPIENT, before).await;
        let stale = app.browser();
        stale.set_cookie("watasu_session", &browser.cookie("watasu_session").unwrap());
        let csrf = code_step.csrf_token();
        let done = Arc::new(AtomicBool::new(false));
        let racers: Vec<_> = (0..4)
            .map(|_| {
                let (client, url, csrf, done) = (
                    stale.client.clone(),
                    stale.url(&format!("/s/{}/download", share.token)),
                    csrf.clone(),
                    done.clone(),
                );
                tokio::spawn(async move {
                    let mut statuses = Vec::new();
                    while !done.load(Ordering::Relaxed) || statuses.is_empty() {
                        let answer = client
                            .post(&url)
                            .header("Sec-Fetch-Site", "same-origin")
                            .form(&[("csrf_token", &csrf)])
                            .send()
                            .await
                            .unwrap();
                        statuses.push(answer.status().as_u16());
                    }
                    statuses
                })
            })
            .collect();

        let verified = browser.submit_code(&share.token, &csrf, &code).await;
        done.store(true, Ordering::Relaxed);

        assert_eq!(verified.status, 303, "{}", verified.body);
        for racer in racers {
            let statuses = racer.await.unwrap();
            // A claim answers 303 to the file; the old cookie must never get one (or the file).
            assert!(
                !statuses.iter().any(|s| [200, 303].contains(s)),
                "round {round}: the old cookie downloaded: {statuses:?}"
            );
        }
        let page = browser.get(&format!("/s/{}", share.token)).await;
        assert_eq!(browser.download(&share.token, &page.csrf_token()).await.status(), 200, "round {round}");
    }
}

both_backends!(
    a_right_code_changes_the_session_id_and_the_old_cookie_has_no_grant,
    five_wrong_codes_kill_the_challenge_even_for_the_right_code,
    requests_in_flight_on_the_old_cookie_never_download_while_the_code_is_verified,
);
