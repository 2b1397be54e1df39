//! The recipient's walk over HTTP with JavaScript off (plain forms), and its security properties.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{
    both_backends,
    support::{Backend, Browser, Page, RECIPIENT, TestApp, count, event_kinds, without_csrf, without_csrf_and_typed},
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

async fn the_whole_walk_downloads_the_exact_bytes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share).await;
    assert_eq!(page.texts(".file-name"), ["report.txt"]);
    assert_eq!(page.texts(".file-size"), ["18 バイト"], "pages speak Japanese unless asked otherwise");
    assert_eq!(page.texts(".file-sha256"), [watasu::secret::sha256_hex("the file contents\n")]);
    assert!(page.body.contains("Here is the file."));
    let response = browser.download(&share.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["content-length"], "18");
    assert_eq!(headers["content-security-policy"], "sandbox; frame-ancestors 'none'");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let kinds = event_kinds(&app, share.id).await;
    for kind in ["opened", "code_sent", "verified", "downloaded"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} event in {kinds:?}");
    }
}

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

async fn another_browser_with_the_same_link_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    app.verify(&app.browser(), &share).await;
    let other = app.browser();
    let landing = other.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.attr("#step", "data-step").as_deref(), Some("email"));
    let response = other.download(&share.token, &landing.csrf_token()).await;
    assert_eq!(response.status(), 403);
    let body = response.text().await.unwrap();
    assert!(!body.contains("the file contents"));
    let refused =
        count(app.db(), "SELECT count(*) FROM share_events WHERE share_id = $1 AND kind = 'refused'", share.id).await;
    assert_eq!(refused, 1);
}

async fn a_session_verified_for_one_share_is_refused_on_another(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share_a = app.create_share().await;
    let share_b = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share_a).await;
    let response = browser.download(&share_b.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 403);
}

async fn get_and_head_on_the_download_address_never_serve_or_consume(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = app.verify(&browser, &share).await;
    let url = browser.url(&format!("/s/{}/download", share.token));
    assert_eq!(browser.client.get(&url).send().await.unwrap().status(), 405);
    assert_eq!(browser.client.head(&url).send().await.unwrap().status(), 405);
    let response = browser.download(&share.token, &page.csrf_token()).await;
    assert_eq!(response.status(), 200);
}

async fn unknown_malformed_and_expired_links_get_one_common_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let expired = app.create_share().await;
    app.expire_share(expired.id).await;
    let browser = app.browser();
    let unknown = watasu::secret::random_token();
    let paths = [
        format!("/s/{}", expired.token),
        format!("/s/{}", unknown.expose()),
        "/s/abcdef".to_owned(),
        format!("/s/{}", "A".repeat(64)),
        "/s/..%2F..%2Fetc%2Fpasswd".to_owned(),
    ];
    let pages = futures_join(&browser, &paths).await;
    for (path, page) in paths.iter().zip(&pages) {
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.texts("h1"), ["This link is not available"], "{path}");
        assert_eq!(page.texts("main p")[0], pages[0].texts("main p")[0], "{path} differs");
        // The expired link names a share, whose page adds a way to write to its sender
        // (`recipient_ends`); the others name none and are one page.
        if path != &paths[0] {
            assert_eq!(page.texts("main"), pages[1].texts("main"), "{path} differs");
        }
    }
    let japanese = browser.get_with(&paths[0], &[("Accept-Language", "ja")]).await;
    assert_eq!(japanese.texts("h1"), ["このリンクは利用できません"]);
}

async fn html_special_and_japanese_file_names_are_escaped_and_encoded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("s@example.test", "<script>alert('s')</script>").await;
    for name in ["<img src=x onerror=alert(1)>\".txt", "見積書 2026年.pdf"] {
        let share = app.fake_share().sender(sender).file(name, b"x").create().await;
        let browser = app.browser();
        let landing = browser.get(&format!("/s/{}", share.token)).await;
        assert!(!landing.body.contains("<script>alert"), "the sender name is not escaped");
        app.smtp.set_delay(Duration::ZERO);
        let page = app.verify(&browser, &share).await;
        assert_eq!(page.texts(".file-name"), [name]);
        assert!(!page.body.contains("<img src=x"), "the file name is not escaped");
        let response = browser.download(&share.token, &page.csrf_token()).await;
        let disposition = response.headers()["content-disposition"].to_str().unwrap().to_owned();
        assert_eq!(disposition, watasu::web::content_disposition(name));
        assert!(disposition.starts_with("attachment; "));
    }
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
    the_whole_walk_downloads_the_exact_bytes,
    a_right_code_changes_the_session_id_and_the_old_cookie_has_no_grant,
    five_wrong_codes_kill_the_challenge_even_for_the_right_code,
    another_browser_with_the_same_link_is_refused,
    a_session_verified_for_one_share_is_refused_on_another,
    get_and_head_on_the_download_address_never_serve_or_consume,
    unknown_malformed_and_expired_links_get_one_common_page,
    html_special_and_japanese_file_names_are_escaped_and_encoded,
    after_any_address_the_session_sees_the_same_pages_whether_or_not_it_matched,
    matched_and_unmatched_addresses_take_indistinguishable_time,
    requests_in_flight_on_the_old_cookie_never_download_while_the_code_is_verified,
    the_code_mail_speaks_the_recipients_browser_language,
    a_code_mail_that_cannot_be_sent_is_retried_then_shown_to_the_sender_only,
    htmx_requests_get_the_next_step_as_a_fragment
);

async fn futures_join(browser: &Browser, paths: &[String]) -> Vec<Page> {
    let mut pages = Vec::new();
    for path in paths {
        pages.push(browser.get_with(path, &[("Accept-Language", "en")]).await);
    }
    pages
}

/// The share's challenges whose code was mailed (`mailed`) or withheld.
async fn challenges(app: &TestApp, share_id: i64, mailed: bool) -> i64 {
    let sql = if mailed {
        "SELECT count(*) FROM otp_challenges WHERE share_id = $1 AND mailed"
    } else {
        "SELECT count(*) FROM otp_challenges WHERE share_id = $1 AND NOT mailed"
    };
    count(app.db(), sql, share_id).await
}
