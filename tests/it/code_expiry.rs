//! A code entered after its time ran out is answered "expired, send a new code", not "wrong": the
//! same answer whether or not the typed address matched (both wait out the same time), and a code
//! that is merely wrong is still called wrong.

use watasu::{db::Sql, i18n::Lang};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, execute, without_csrf_and_typed},
};

const TYPO: &str = "recipiant@example.test";
const EXPIRE: &str = "UPDATE otp_challenges SET expires_at = created_at WHERE share_id = $1";

fn plain(text: &str) -> String {
    text.replace('|', "")
}

async fn a_code_entered_after_it_expired_is_called_expired_and_a_new_one_offered(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let before = app.smtp.messages().len();
    let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    execute(app.db(), Sql::same(EXPIRE), share.id).await;

    let answer = browser.submit_code(&share.token, &code_step.csrf_token(), &code).await;
    let page = browser.follow(&share.token, answer).await;

    let rf = &Lang::Ja.text().recipient;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("code"), "{}", page.body);
    assert_eq!(page.texts("#code-status").concat(), plain(rf.code_expired));
    let resend = format!("/s/{}/code/new", share.token);
    assert_eq!(page.attr(&format!("#step form[action='{resend}'] button"), "type").as_deref(), Some("submit"));
    let english = browser.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    assert_eq!(english.texts("#code-status").concat(), Lang::En.text().recipient.code_expired);
}

async fn an_expired_code_reads_the_same_whether_or_not_the_address_matched(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let mut pages = Vec::new();
    for address in [RECIPIENT, TYPO] {
        let browser = app.browser();
        let code_step = browser.ask_for_code(&share.token, address).await;
        execute(app.db(), Sql::same(EXPIRE), share.id).await;
        let answer = browser.submit_code(&share.token, &code_step.csrf_token(), "123456").await;
        pages.push(browser.follow(&share.token, answer).await);
    }

    assert_eq!(pages[0].texts("#code-status").concat(), plain(Lang::Ja.text().recipient.code_expired));
    assert_eq!(without_csrf_and_typed(&pages[0].body), without_csrf_and_typed(&pages[1].body));
}

async fn a_wrong_code_in_time_is_still_called_wrong(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browser = app.browser();
    let before = app.smtp.messages().len();
    let code_step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };

    let answer = browser.submit_code(&share.token, &code_step.csrf_token(), wrong).await;
    let page = browser.follow(&share.token, answer).await;

    let status = page.texts("#code-status").concat();
    assert!(status.starts_with(Lang::Ja.text().recipient.code_wrong), "{status:?}");
    assert_ne!(status, plain(Lang::Ja.text().recipient.code_expired));
}

both_backends!(
    a_code_entered_after_it_expired_is_called_expired_and_a_new_one_offered,
    an_expired_code_reads_the_same_whether_or_not_the_address_matched,
    a_wrong_code_in_time_is_still_called_wrong
);
