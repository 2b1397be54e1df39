//! Property-based hostile input (proptest) for the token and form parsers, on top of the
//! table-driven cases in `hostile_input`: arbitrary tokens in every /s/{token} route, arbitrary
//! addresses and codes in the recipient's forms, arbitrary recipients and file names in the
//! upload. Never a 5xx, never a leak, and nothing changes unless the input was valid.
//!
//! The runner is seeded: a failure reproduces, and the shrunk case is in the panic message.

use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner},
};

use super::{PASSWORD, forget_rate_limits, lines, sign_in, upload_body, upload_request};
use crate::{
    both_backends,
    hostile_input::{Snapshot, assert_friendly, percent_encode, snapshot},
    support::{Backend, Page, TestApp, count, without_csrf_and_typed},
};

use crate::support::RECIPIENT;

/// Runs `property` on `cases` values of `strategy`, from a fixed seed; the body runs on the
/// test's runtime (the runner itself is synchronous).
fn check<S: Strategy>(cases: u32, strategy: S, property: impl AsyncFn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 200, ..Config::default() };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let handle = tokio::runtime::Handle::current();
    let outcome = tokio::task::block_in_place(|| runner.run(&strategy, |value| handle.block_on(property(value))));
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

/// Anything a token could be sent as: any text, printable ASCII, and near-tokens (hex of about
/// the right length, in either case).
fn tokens() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[ -~]{0,80}", "[0-9a-fA-F]{60,68}", "[0-9a-f]{64}",]
}

/// Text for form fields: any text (controls and line breaks included), and near-addresses.
fn field_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,120}",
        "[a-zA-Z0-9.+_-]{0,20}@[a-zA-Z0-9.-]{0,20}",
        "[\\PC\r\n\t\"'<>%;\\\\]{0,40}",
        "[0-9０-９]{0,8}",
    ]
}

fn status_is(page: &Page, allowed: &[u16], case: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        allowed.contains(&page.status.as_u16()),
        "{case}: status {} not in {allowed:?}: {}",
        page.status,
        page.body
    );
    Ok(())
}

async fn arbitrary_tokens_in_every_share_route_get_a_4xx_page_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.landed_browser(&share.token).await;
    let before = snapshot(&app).await;
    check(96, tokens(), async |token: String| {
        prop_assume!(token != share.token);
        let path = format!("/s/{}", percent_encode(token.as_bytes()));
        let case = format!("token {token:?}");
        let fields = [("csrf_token", csrf.as_str()), ("email", RECIPIENT), ("code", "123456")];
        let answers = [
            browser.get(&path).await,
            browser.post_form(&format!("{path}/email"), &fields).await,
            browser.post_form(&format!("{path}/code"), &fields).await,
            browser.post_form(&format!("{path}/download"), &fields).await,
        ];
        for page in &answers {
            prop_assert!(page.status.is_client_error(), "{case}: {} {}", page.status, page.body);
            assert_friendly(&page.body, page.header("content-type"), &case);
        }
        Ok(())
    });
    assert_eq!(snapshot(&app).await, before);
    assert!(app.smtp.messages().is_empty());
}

async fn arbitrary_addresses_and_codes_get_the_usual_step_page_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.landed_browser(&share.token).await;
    let email_path = format!("/s/{}/email", share.token);
    let code_path = format!("/s/{}/code", share.token);
    let wrong = browser.post_form(&email_path, &[("csrf_token", &csrf), ("email", "nobody@example.test")]).await;
    assert_eq!(wrong.status, 303);
    let wrong = browser.follow(&share.token, wrong).await;
    assert_eq!(wrong.status, 200);
    let before = snapshot(&app).await;
    check(96, (field_text(), field_text()), async |(email, code): (String, String)| {
        let is_recipient = watasu::accounts::EmailAddress::parse(&email).is_ok_and(|a| a.as_str() == RECIPIENT);
        prop_assume!(!is_recipient);
        // Every submission counts towards the limits; the drill sends more than a person would.
        forget_rate_limits(&app).await;
        let case = format!("email {email:?}, code {code:?}");
        let answer = browser.post_form(&email_path, &[("csrf_token", &csrf), ("email", &email)]).await;
        status_is(&answer, &[303], &case)?;
        let answer = browser.follow(&share.token, answer).await;
        status_is(&answer, &[200], &case)?;
        let page = without_csrf_and_typed(&answer.body);
        prop_assert_eq!(page, without_csrf_and_typed(&wrong.body), "{}: not the page any wrong address gets", case);
        let answer = browser.post_form(&code_path, &[("csrf_token", &csrf), ("code", &code)]).await;
        status_is(&answer, &[303], &case)?;
        let answer = browser.follow(&share.token, answer).await;
        status_is(&answer, &[200], &case)?;
        let step = answer.attr("#step", "data-step");
        prop_assert_eq!(step.as_deref(), Some("code"), "{}", case);
        assert_friendly(&answer.body, answer.header("content-type"), &case);
        Ok(())
    });
    // A six-digit guess is a wrong code on the withheld challenge, recorded as any wrong code is.
    let after = snapshot(&app).await;
    let wrong_codes =
        count(app.db(), "SELECT count(*) FROM share_events WHERE kind = 'code_failed' AND id > $1", 0).await;
    assert_eq!(Snapshot { events_besides_opened: after.events_besides_opened - wrong_codes, ..after }, before);
    assert!(app.smtp.messages().is_empty(), "a code went out");
}

async fn arbitrary_recipients_and_file_names_in_an_upload_give_a_share_a_question_or_a_4xx_never_a_5xx(
    backend: Backend,
) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
    let browser = app.browser();
    sign_in(&browser, "s@example.test").await;
    let csrf = browser.get("/shares/new").await.csrf_token();
    let created = std::cell::Cell::new(0u32);
    check(48, (field_text(), field_text()), async |(recipient, file_name): (String, String)| {
        let case = format!("recipient {recipient:?}, file name {file_name:?}");
        let before = snapshot(&app).await;
        let body = upload_body(&csrf, &recipient, &file_name, b"contents");
        let page = Page::read(upload_request(&browser.client, &app.base, body.into()).send().await.unwrap()).await;
        // A likely typo is asked about: the form again, the file kept for the answer, no share.
        let asked = page.status == 200 && !page.texts("[data-address-check]").is_empty();
        let refused = page.status.is_client_error();
        prop_assert!(page.status == 303 || asked || refused, "{case}: {} {}", page.status, page.body);
        let made = page.status == 303;
        let page = if made { page.follow_created(&browser.client, &app.base).await } else { page };
        assert_friendly(&page.body, page.header("content-type"), &case);
        let after = snapshot(&app).await;
        if asked {
            prop_assert_eq!(after.shares, before.shares, "{}: a share was made before the address was confirmed", case);
        } else if made {
            created.set(created.get() + 1);
            prop_assert_eq!(after.shares, before.shares + 1, "{}", case);
            prop_assert_eq!(after.files.len(), before.files.len() + 1, "{}", case);
            let names = lines(app.db(), "SELECT original_name FROM files ORDER BY id DESC").await;
            let name = &names[0];
            let clean = !name.is_empty() && name.chars().count() <= 255 && !name.chars().any(char::is_control);
            prop_assert!(clean, "{case}: stored as {name:?}");
        } else {
            prop_assert_eq!(after, before, "{}: a refused upload changed something", case);
        }
        Ok(())
    });
    assert!(created.get() > 0, "no generated upload was valid: the property tested only refusals");
}

both_backends!(
    arbitrary_tokens_in_every_share_route_get_a_4xx_page_and_change_nothing,
    arbitrary_addresses_and_codes_get_the_usual_step_page_and_change_nothing,
    arbitrary_recipients_and_file_names_in_an_upload_give_a_share_a_question_or_a_4xx_never_a_5xx
);
