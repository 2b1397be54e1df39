//! The forgiving recipient flow over HTTP with JavaScript off: every form post answers 303 to the
//! link, so a reload shows the same step and costs nothing; the code step shows back the typed
//! address (never the registered one) and says what the last post did; the coming lock is said
//! before it bites (limits on code requests: `recipient_slips`); the "already downloaded" page tells the browser that downloaded when.

use std::time::Duration;

use watasu::{
    i18n::{Lang, format},
    secret::sha256_hex,
};

use crate::support::{Backend, Page, RECIPIENT, TestApp, TestShare, count, execute, without_csrf_and_typed};
use watasu::db::Sql;

const TYPO: &str = "recipiant@example.test";

/// A catalogue sentence as the page reads: its phrase marks are line-break opportunities, not text.
fn plain(text: &str) -> String {
    text.replace('|', "")
}

fn step_of(page: &Page) -> Option<String> {
    page.attr("#step", "data-step")
}

/// Challenges (code requests) the share has had, mailed or not.
async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

/// The code step's status line.
fn status_line(page: &Page) -> String {
    page.texts("#code-status").concat()
}

async fn a_reload_of_the_code_step_shows_it_again_and_requests_no_code(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let page = browser.ask_for_code(&share.token, RECIPIENT).await;
    app.smtp.wait_for(1, Duration::from_secs(10)).await;

    let reloads = [browser.open_link(&share.token).await, browser.open_link(&share.token).await];

    assert_eq!(step_of(&page).as_deref(), Some("code"));
    for reload in &reloads {
        assert_eq!(step_of(reload).as_deref(), Some("code"), "{}", reload.body);
        assert_eq!(reload.texts(".typed-address"), [RECIPIENT]);
    }
    assert_eq!(challenges(&app, &share).await, 1, "a reload made a new code request");
    assert!(page.attr("a[href*='step=']", "href").is_none(), "the step still lives in a link");
}

async fn the_code_step_shows_the_typed_address_and_never_the_registered_one(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;

    let typo = app.browser().ask_for_code(&share.token, &format!("  {TYPO} ")).await;
    let right = app.browser().ask_for_code(&share.token, "Recipient@Example.test").await;

    assert_eq!(typo.texts(".typed-address"), [TYPO]);
    assert!(!typo.body.contains(RECIPIENT), "the page names the registered address");
    assert_eq!(right.texts(".typed-address"), ["Recipient@Example.test"]);
    assert!(!right.body.contains(RECIPIENT), "the page names the registered address, not the typed one");
    let said = plain(Lang::Ja.text().recipient.code_sent_if);
    assert!(typo.texts(".code-sent")[0].ends_with(&said), "{:?}", typo.texts(".code-sent"));
    assert_eq!(without_csrf_and_typed(&typo.body), without_csrf_and_typed(&right.body));
}

async fn a_typo_then_another_address_then_the_right_one_reaches_the_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let code_step = browser.ask_for_code(&share.token, TYPO).await;

    let back = browser.use_other_address(&share.token, &code_step.csrf_token()).await;
    let reloaded = browser.open_link(&share.token).await;
    let requests_after_going_back = challenges(&app, &share).await;
    let before = app.smtp.messages().len();
    let answer = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &back.csrf_token()), ("email", RECIPIENT)])
        .await;
    let right = browser.follow(&share.token, answer).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    let verified = browser.submit_code(&share.token, &right.csrf_token(), &code).await;
    let download = browser.follow(&share.token, verified).await;

    assert_eq!(step_of(&back).as_deref(), Some("email"), "{}", back.body);
    assert_eq!(back.attr("input[name=email]", "value").as_deref(), Some(TYPO), "the typo is there to correct");
    assert_eq!(step_of(&reloaded).as_deref(), Some("email"), "a reload left the email step");
    assert_eq!(requests_after_going_back, 1, "going back cost a code request");
    assert_eq!(right.texts(".typed-address"), [RECIPIENT]);
    assert_eq!(step_of(&download).as_deref(), Some("download"), "{}", download.body);
}

async fn the_code_step_warns_while_two_wrong_codes_or_fewer_are_left_before_the_lock(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    execute(app.db(), Sql::same("UPDATE shares SET wrong_codes = 12 WHERE id = $1"), share.id).await;
    let browser = app.browser();
    let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for(RECIPIENT).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let csrf = code_step.csrf_token();
    let mut after = Vec::new();
    for _ in 0..3 {
        let answer = browser.submit_code(&share.token, &csrf, wrong).await;
        after.push(browser.follow(&share.token, answer).await);
    }

    let rf = &Lang::Ja.text().recipient;
    assert!(code_step.texts("#lock-warning").is_empty(), "a warning with three wrong codes left");
    assert_eq!(after[0].texts("#lock-warning"), [plain(&rf.lock_warning_many.replace("{n}", "2"))]);
    assert_eq!(after[1].texts("#lock-warning"), [plain(rf.lock_warning_one)]);
    assert_eq!(after[2].status, 403, "the third wrong code did not lock the link");
    assert!(after[2].texts("h1")[0].contains("ロック"), "{:?}", after[2].texts("h1"));
}

async fn the_gone_page_tells_the_browser_that_downloaded_when_and_others_to_contact_the_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.verified_browser(&share).await;
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 200);
    let cookie = browser.cookie("watasu_session").unwrap();
    let session = app.state.sessions.load(&cookie).await.unwrap().unwrap();
    let at = app.state.shares.links.repo().claimed_here(&sha256_hex(&share.token), &session).await.unwrap().unwrap().at;

    let own = browser.open_link(&share.token).await;
    // A browser with a session of its own, from another share.
    let stranger = app.browser();
    stranger.ask_for_code(&app.create_share().await.token, RECIPIENT).await;
    let strangers = stranger.open_link(&share.token).await;
    let cookieless = app.browser().open_link(&share.token).await;

    let rf = &Lang::Ja.text().recipient;
    assert_eq!(own.status, 410);
    assert_eq!(
        own.texts(".end-body"),
        [plain(&rf.downloaded_here.replace("{time}", &format::human_time(at, Lang::Ja)))]
    );
    for page in [&strangers, &cookieless] {
        assert_eq!(page.status, 410);
        assert_eq!(page.texts(".end-body"), [plain(rf.downloaded_elsewhere)]);
        assert_eq!(page.texts("h1"), own.texts("h1"));
    }
}

async fn the_steps_say_the_file_downloads_once_and_where_it_goes_without_javascript(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let rf = &Lang::Ja.text().recipient;

    let landing = app.browser().open_link(&share.token).await;
    let (browser, _) = app.verified_browser(&share).await;
    let download = browser.open_link(&share.token).await;

    assert_eq!(landing.texts(".once-before"), [plain(rf.once_before)]);
    assert_eq!(download.texts("#download-after"), [plain(rf.after_press)]);
    assert!(download.attr("#download-after", "hidden").is_none(), "the note needs JavaScript to show");
    assert_eq!(download.attr("form[data-download] button", "aria-describedby").as_deref(), Some("download-after"));
}

async fn htmx_posts_get_the_step_they_lead_to_as_a_fragment(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let post = async |path: &str, fields: &[(&str, &str)], csrf: &str| {
        let htmx = [("HX-Request", "true"), ("X-CSRF-Token", csrf), ("Sec-Fetch-Site", "same-origin")];
        browser.post_form_with(&format!("/s/{}/{path}", share.token), fields, &htmx).await
    };

    let landing = browser.open_link(&share.token).await;
    let code_step = post("email", &[("email", TYPO)], &landing.csrf_token()).await;
    let resent = post("code/new", &[], &code_step.csrf_token()).await;
    let back = post("address", &[], &resent.csrf_token()).await;

    for (page, step) in [(&code_step, "code"), (&resent, "code"), (&back, "email")] {
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.trim_start().starts_with("<section id=\"step\""), "{}", page.body);
        assert_eq!(step_of(page).as_deref(), Some(step));
    }
    assert_eq!(code_step.texts(".typed-address"), [TYPO]);
    assert_eq!(resent.texts(".typed-address"), [TYPO], "a new code forgot the typed address");
    assert!(!status_line(&resent).is_empty());
}

crate::both_backends!(
    a_reload_of_the_code_step_shows_it_again_and_requests_no_code,
    the_code_step_shows_the_typed_address_and_never_the_registered_one,
    a_typo_then_another_address_then_the_right_one_reaches_the_file,
    the_code_step_warns_while_two_wrong_codes_or_fewer_are_left_before_the_lock,
    the_gone_page_tells_the_browser_that_downloaded_when_and_others_to_contact_the_sender,
    the_steps_say_the_file_downloads_once_and_where_it_goes_without_javascript,
    htmx_posts_get_the_step_they_lead_to_as_a_fragment
);
