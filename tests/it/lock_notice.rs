//! A share that locks after too many wrong codes mails its sender at once, saying whether the
//! codes came from one browser or several and what unlocking keeps and a fresh link replaces; the
//! share page says the same beside its buttons.

use std::time::Duration;

use watasu::i18n::Lang;

use watasu::db::Sql;

use crate::support::{Backend, Browser, PASSWORD, RECIPIENT, TestApp, TestShare, execute};
use crate::{both_backends, support::smtp::ReceivedMail};

const SENDER: &str = "sender@example.test";

/// A browser that asked for a code and typed a wrong one; returns it and its code step's token.
pub(crate) async fn typed_a_wrong_code(app: &TestApp, share: &TestShare) -> (Browser, String) {
    let browser = app.browser();
    let before = app.smtp.messages().len();
    let step = browser.ask_for_code(&share.token, RECIPIENT).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    let csrf = step.csrf_token();
    browser.submit_code(&share.token, &csrf, &wrong(&code)).await;
    (browser, csrf)
}

fn wrong(code: &str) -> String {
    code.chars().map(|c| if c == '1' { '2' } else { '1' }).collect()
}

/// Brings the share to its last try, then `browser` spends it: the share locks.
pub(crate) async fn lock_with(app: &TestApp, share: &TestShare, browser: &Browser, csrf: &str) {
    execute(app.db(), Sql::same("UPDATE shares SET wrong_codes = 14 WHERE id = $1"), share.id).await;
    browser.submit_code(&share.token, csrf, "000000").await;
}

async fn lock_notice(app: &TestApp) -> ReceivedMail {
    for _ in 0..200 {
        if let Some(mail) = app.smtp.messages().into_iter().find(|m| m.to == [SENDER]) {
            return mail;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no lock notice reached the sender");
}

async fn a_share_locked_by_one_browser_mails_its_sender_in_their_language(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    execute(app.db(), Sql::same("UPDATE users SET lang = 'en' WHERE id = $1"), sender).await;
    let share = app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
    let (browser, csrf) = typed_a_wrong_code(&app, &share).await;

    lock_with(&app, &share, &browser, &csrf).await;

    let mail = lock_notice(&app).await;
    let (t, text) = (Lang::En.text(), mail.text());
    assert_eq!(mail.subject(), t.mail.locked_subject.replace("{recipient}", RECIPIENT));
    assert!(text.contains(t.dashboard.locked_one_browser), "{text}");
    assert!(text.contains(t.dashboard.unlock_keeps) && text.contains(t.dashboard.fresh_link_replaces), "{text}");
    assert!(text.contains("plan.pdf") && text.contains(&format!("{}/shares/{}", app.base, share.id)), "{text}");
    let dashboard = app.sign_in(SENDER, PASSWORD).await;
    let page = dashboard.get_with(&format!("/shares/{}", share.id), &[("Accept-Language", "en")]).await;
    assert_eq!(page.texts("[data-locked-browsers]"), [t.dashboard.locked_one_browser]);
    assert_eq!(page.texts("[data-unlock-keeps]"), [t.dashboard.unlock_keeps]);
}

async fn a_share_locked_by_several_browsers_says_so(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
    typed_a_wrong_code(&app, &share).await;
    let (second, csrf) = typed_a_wrong_code(&app, &share).await;

    lock_with(&app, &share, &second, &csrf).await;

    let mail = lock_notice(&app).await;
    let t = Lang::Ja.text();
    let several = t.dashboard.locked_several_browsers.replace("{n}", "2");
    assert!(mail.text().contains(&several), "{}", mail.text());
    let dashboard = app.sign_in(SENDER, PASSWORD).await;
    let page = dashboard.get_with(&format!("/shares/{}", share.id), &[("Accept-Language", "ja")]).await;
    assert_eq!(page.texts("[data-locked-browsers]"), [several]);
}

both_backends!(
    a_share_locked_by_one_browser_mails_its_sender_in_their_language,
    a_share_locked_by_several_browsers_says_so
);
