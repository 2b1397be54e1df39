//! One slip is never punished: "send a new code" while the code works mails that same code again
//! and spends no code request; the step before the last request says it is the last until when;
//! once the requests are used up with no working code, the forms give way to when to ask again,
//! the spam-folder hint and the sender's name, and the sender's timeline shows the block once.
//! Matched or not, every answer and state look the same.

use std::time::Duration;

use watasu::{db::Sql, i18n::Lang};

use crate::support::{
    Backend, Browser, Page, RECIPIENT, TestApp, TestShare, clock, count, event_kinds, execute, without_csrf_and_typed,
};

const TYPO: &str = "recipiant@example.test";

fn plain(text: &str) -> String {
    text.replace('|', "")
}

fn step_of(page: &Page) -> Option<String> {
    page.attr("#step", "data-step")
}

async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

/// Three typos in a row, each followed by "use a different address": the browser is back at the
/// email step with its code requests used up. Also answers a CSRF token of the session (the
/// blocked step has no form), for a stale form posted anyway.
async fn three_typos(app: &TestApp, share: &TestShare) -> (Browser, Page, String) {
    let browser = app.browser();
    let mut last = None;
    for _ in 0..3 {
        let csrf = browser.ask_for_code(&share.token, TYPO).await.csrf_token();
        last = Some((browser.use_other_address(&share.token, &csrf).await, csrf));
    }
    let (page, csrf) = last.unwrap();
    (browser, page, csrf)
}

async fn a_new_code_while_the_code_works_is_the_same_code_again_and_spends_no_request(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let rf = &Lang::Ja.text().recipient;
    let (right, wrong) = (app.browser(), app.browser());
    let mut pages = Vec::new();
    for (browser, address) in [(&right, RECIPIENT), (&wrong, TYPO)] {
        let csrf = browser.ask_for_code(&share.token, address).await.csrf_token();
        let mut resent = Vec::new();
        for _ in 0..4 {
            resent.push(browser.resend_code(&share.token, &csrf).await);
        }
        pages.push(resent);
    }
    let mails = app.smtp.wait_for(5, Duration::from_secs(10)).await;

    let (before, after) = rf.code_repeated.split_once("{time}").unwrap();
    for page in pages.iter().flatten() {
        assert_eq!(step_of(page).as_deref(), Some("code"), "{}", page.body);
        let said = page.texts("#code-status").concat();
        assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
        assert_eq!(page.attr("#code-status", "class").as_deref(), Some("ok-text"));
        assert!(page.texts("#last-request").is_empty(), "a free re-send was called the last request");
    }
    for (r, w) in pages[0].iter().zip(&pages[1]) {
        assert_eq!(without_csrf_and_typed(&r.body), without_csrf_and_typed(&w.body), "a re-send reveals the match");
    }
    assert_eq!(challenges(&app, &share).await, 2, "a re-send made a new code");
    assert!(mails.iter().all(|m| m.to == [RECIPIENT]), "a mail went to a typed address");
    let codes: Vec<String> = mails.iter().map(|m| m.code().unwrap()).collect();
    assert!(codes.iter().all(|c| *c == codes[0]), "a re-send mailed another code: {codes:?}");

    let verified = right.submit_code(&share.token, &pages[0][3].csrf_token(), &codes[0]).await;
    let download = right.follow(&share.token, verified).await;
    assert_eq!(step_of(&download).as_deref(), Some("download"), "the code sent again did not work");
    let sealed = "SELECT count(*) FROM otp_challenges WHERE share_id = $1 AND code_sealed IS NOT NULL";
    assert_eq!(count(app.db(), sealed, share.id).await, 0, "a used code is still kept");
}

async fn sending_the_same_code_again_still_spends_the_share_s_code_mail_budget(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let csrf = browser.ask_for_code(&share.token, RECIPIENT).await.csrf_token();
    app.smtp.wait_for(1, Duration::from_secs(10)).await;

    for sent in 2..=6 {
        browser.resend_code(&share.token, &csrf).await;
        if sent <= 5 {
            app.smtp.wait_for(sent, Duration::from_secs(10)).await;
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !event_kinds(&app, share.id).await.iter().any(|k| k == "code_mail_failed") {
        assert!(std::time::Instant::now() < deadline, "the sixth code mail was not held back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    assert_eq!(app.smtp.messages().len(), 5, "sending again got past the code-mail budget");
}

async fn the_step_before_the_last_request_says_it_is_the_last_until_a_time(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let first = browser.ask_for_code(&share.token, TYPO).await;
    let email_step = browser.use_other_address(&share.token, &first.csrf_token()).await;
    let second = browser.ask_for_code(&share.token, TYPO).await;
    let last_email_step = browser.use_other_address(&share.token, &second.csrf_token()).await;

    let rf = &Lang::Ja.text().recipient;
    let (before, after) = rf.last_request.split_once("{time}").unwrap();
    assert!(email_step.texts("#last-request").is_empty(), "two requests left were called the last");
    assert!(first.texts("#last-request").is_empty() && second.texts("#last-request").is_empty());
    assert_eq!(step_of(&last_email_step).as_deref(), Some("email"));
    let said = last_email_step.texts("#last-request").concat();
    assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
    assert!(said.contains("（日本時間）"), "the time does not say its zone: {said:?}");
}

async fn a_dead_code_with_one_request_left_says_the_next_is_the_last(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let first = browser.ask_for_code(&share.token, TYPO).await;
    browser.use_other_address(&share.token, &first.csrf_token()).await;
    browser.ask_for_code(&share.token, TYPO).await;
    let expire = "UPDATE otp_challenges SET expires_at = created_at WHERE share_id = $1";
    execute(app.db(), Sql::same(expire), share.id).await;

    let dead = browser.open_link(&share.token).await;

    let rf = &Lang::En.text().recipient;
    let english = browser.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    assert_eq!(step_of(&dead).as_deref(), Some("code"));
    assert_eq!(dead.texts("#code-status").concat(), plain(Lang::Ja.text().recipient.code_expired));
    assert_eq!(dead.texts("#last-request").len(), 1);
    let said = english.texts("#last-request").concat();
    assert!(said.starts_with(rf.last_request.split("{time}").next().unwrap()), "{said:?}");
    assert!(said.contains(" UTC"), "the time does not say its zone: {said:?}");
}

async fn used_up_requests_give_way_to_when_to_ask_again_the_spam_hint_and_the_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("sender@example.test", "佐藤 花子").await;
    let share = app.fake_share().sender(sender).create().await;
    let (browser, blocked, csrf) = three_typos(&app, &share).await;
    let stale = [("csrf_token", csrf), ("email", RECIPIENT.to_owned())];
    let stale: Vec<(&str, &str)> = stale.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = browser.post_form(&format!("/s/{}/email", share.token), &stale).await;
    let after_refusal = browser.follow(&share.token, refused).await;
    let resend = browser.post_form(&format!("/s/{}/code/new", share.token), &stale[..1]).await;
    let after_resend = browser.follow(&share.token, resend).await;
    let english = browser.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;

    let rf = &Lang::Ja.text().recipient;
    for page in [&blocked, &after_refusal, &after_resend] {
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(step_of(page).as_deref(), Some("blocked"), "{}", page.body);
        assert!(page.attr("#step input", "name").is_none(), "a box that cannot work is still shown");
        assert!(page.texts("#step form").is_empty(), "a form that cannot work is still shown");
        let until = page.texts("#blocked-until").concat();
        assert!(until.contains("（あと10分）"), "{until:?}");
        assert!(until.contains("（日本時間）"), "{until:?}");
        assert_eq!(page.texts("#step .hint"), [rf.spam_hint]);
        assert_eq!(page.texts(".blocked-sender strong"), ["佐藤 花子"]);
        assert_eq!(page.attr("#step a.button", "href"), Some(format!("/s/{}", share.token)));
    }
    assert!(english.texts("#blocked-until").concat().contains("(in 10 min)"), "{}", english.body);
    assert!(english.texts("#blocked-until").concat().contains(" UTC"), "{}", english.body);
    assert_eq!(challenges(&app, &share).await, 3, "a refused request made a code");
    let blocks = event_kinds(&app, share.id).await.iter().filter(|k| *k == "code_requests_blocked").count();
    assert_eq!(blocks, 1, "the sender heard of one block more than once");
}

async fn a_block_looks_the_same_whether_or_not_the_address_matched(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browsers = [app.browser(), app.browser()];
    for (browser, address) in browsers.iter().zip([RECIPIENT, TYPO]) {
        for _ in 0..3 {
            browser.ask_for_code(&share.token, address).await;
        }
    }
    // The code no longer works: "send a new code" would need a request.
    let expire = "UPDATE otp_challenges SET expires_at = created_at WHERE share_id = $1";
    execute(app.db(), Sql::same(expire), share.id).await;
    // Both blocks end at one moment, so the pages name the same minute however long the asking took.
    app.set_ago("rate_limit_hits", &["at"], 0, clock::ALL).await;
    let mut pages = Vec::new();
    for browser in &browsers {
        pages.push(browser.open_link(&share.token).await);
    }

    assert_eq!(step_of(&pages[0]).as_deref(), Some("blocked"));
    assert_eq!(without_csrf_and_typed(&pages[0].body), without_csrf_and_typed(&pages[1].body));
}

async fn a_block_with_a_working_code_keeps_the_code_box(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    for _ in 0..2 {
        browser.ask_for_code(&share.token, TYPO).await;
    }
    let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for(RECIPIENT).await;
    let resent = browser.resend_code(&share.token, &code_step.csrf_token()).await;
    let verified = browser.submit_code(&share.token, &resent.csrf_token(), &code).await;
    let download = browser.follow(&share.token, verified).await;

    assert_eq!(step_of(&resent).as_deref(), Some("code"), "{}", resent.body);
    assert!(resent.attr("input#code", "name").is_some(), "the working code lost its box");
    assert_eq!(step_of(&download).as_deref(), Some("download"));
}

async fn htmx_gets_the_blocked_step_as_a_fragment(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, _, csrf) = three_typos(&app, &share).await;
    let htmx = [("HX-Request", "true"), ("X-CSRF-Token", csrf.as_str()), ("Sec-Fetch-Site", "same-origin")];

    let answer = browser.post_form_with(&format!("/s/{}/email", share.token), &[("email", RECIPIENT)], &htmx).await;

    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.trim_start().starts_with("<section id=\"step\""), "{}", answer.body);
    assert_eq!(step_of(&answer).as_deref(), Some("blocked"));
}

crate::both_backends!(
    a_new_code_while_the_code_works_is_the_same_code_again_and_spends_no_request,
    sending_the_same_code_again_still_spends_the_share_s_code_mail_budget,
    the_step_before_the_last_request_says_it_is_the_last_until_a_time,
    a_dead_code_with_one_request_left_says_the_next_is_the_last,
    used_up_requests_give_way_to_when_to_ask_again_the_spam_hint_and_the_sender,
    a_block_looks_the_same_whether_or_not_the_address_matched,
    a_block_with_a_working_code_keeps_the_code_box,
    htmx_gets_the_blocked_step_as_a_fragment
);
