//! The SMTP relay down (every transaction refused with 421) while people keep using the app: the
//! recipient's pages answer exactly as they do with the relay up; the code mail is retried
//! briefly and then shows on the sender's share page; notification mails and receipts wait in the
//! outbox and go out once the relay is back, each exactly once.

use std::time::Duration;

use super::{PASSWORD, db_state, event_kinds, eventually, forget_rate_limits, sign_in, upload_body, upload_request};
use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp, TestShare, without_csrf_and_typed},
};

const SENDER: &str = "sato@example.test";
use crate::support::RECIPIENT;
const NEW_RECIPIENT: &str = "client@example.test";

/// A new browser opens the link and gives `address`: (the browser, its landing page, the page the
/// answer led to).
async fn ask_for_code(app: &TestApp, share: &TestShare, address: &str) -> (Browser, Page, Page) {
    let browser = app.browser();
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let answer = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &landing.csrf_token()), ("email", address)])
        .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let page = browser.follow(&share.token, answer).await;
    (browser, landing, page)
}

fn assert_same_page(a: &Page, b: &Page, what: &str) {
    assert_eq!(a.status, b.status, "{what}");
    assert_eq!(without_csrf_and_typed(&a.body), without_csrf_and_typed(&b.body), "{what}: the page differs");
}

async fn with_the_relay_down_recipients_see_no_difference_and_every_queued_mail_arrives_later(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender_id = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender_id).file("report.txt", b"the report\n").create().await;

    // The relay up: the answers to the right and to a wrong address, and the code mail.
    let (early, up_landing, up_right) = ask_for_code(&app, &share, RECIPIENT).await;
    let code = app.smtp.wait_for(1, Duration::from_secs(10)).await[0].code().unwrap();
    let (_, _, up_wrong) = ask_for_code(&app, &share, "someone.else@example.test").await;
    eventually(Duration::from_secs(5), "the code_sent event", async || {
        event_kinds(app.db(), share.id).await.contains(&"code_sent".to_owned())
    })
    .await;
    forget_rate_limits(&app).await;
    let before = db_state(app.db()).await;

    // The relay down: the same pages, byte for byte but the CSRF tokens.
    app.smtp.set_refusing(true);
    let (late, down_landing, down_right) = ask_for_code(&app, &share, RECIPIENT).await;
    let (_, _, down_wrong) = ask_for_code(&app, &share, "someone.else@example.test").await;
    assert_same_page(&up_landing, &down_landing, "landing page");
    assert_same_page(&up_right, &down_right, "answer to the right address");
    assert_same_page(&up_wrong, &down_wrong, "answer to a wrong address");
    assert_same_page(&down_right, &down_wrong, "right and wrong address while the relay is down");

    // One attempt and three quick retries, then the sender's timeline says so; the recipient's
    // page does not.
    eventually(Duration::from_secs(30), "the code_mail_failed event", async || {
        event_kinds(app.db(), share.id).await.contains(&"code_mail_failed".to_owned())
    })
    .await;
    assert_eq!(app.smtp.refused(), 4, "the code mail is tried once and retried three times");
    let sender = app.browser();
    sign_in(&sender, SENDER).await;
    let timeline = sender.get_with(&format!("/shares/{}", share.id), &[("Accept-Language", "en")]).await;
    let failed_text = watasu::i18n::Lang::En.text().dashboard.event_code_mail_failed;
    assert_eq!(timeline.texts("li[data-kind=code_mail_failed]").len(), 1, "{}", timeline.body);
    assert!(timeline.texts("li[data-kind=code_mail_failed]")[0].ends_with(failed_text));
    let early_again = early.get(&format!("/s/{}", share.token)).await;
    let late_again = late.get(&format!("/s/{}", share.token)).await;
    assert_same_page(&early_again, &late_again, "the code step of a delivered and of a failed code");
    assert_eq!(late_again.attr("#step", "data-step").as_deref(), Some("code"));

    // A new share's notification and a download receipt wait in the outbox.
    let csrf = sender.get("/shares/new").await.csrf_token();
    let body = upload_body(&csrf, NEW_RECIPIENT, "plan.txt", b"the plan\n");
    let answer = Page::read(upload_request(&sender.client, &app.base, body.into()).send().await.unwrap()).await;
    let created = answer.follow_created(&sender.client, &app.base).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let link = created.attr("#share-link", "value").expect("the link is shown");
    let verified = early
        .post_form(&format!("/s/{}/code", share.token), &[("csrf_token", &up_right.csrf_token()), ("code", &code)])
        .await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    let download_page = early.get(&format!("/s/{}", share.token)).await;
    let download = early.download(&share.token, &download_page.csrf_token()).await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"the report\n");
    let waiting = [format!("share_notification {NEW_RECIPIENT} pending"), format!("download_receipt {SENDER} pending")];
    eventually(Duration::from_secs(10), "both mails to be tried once and wait", async || {
        let outbox = db_state(app.db()).await.outbox;
        let rows = outbox.iter().map(|l| l.split_once(' ').unwrap().1.to_owned());
        app.smtp.refused() == 6 && rows.eq(waiting.clone())
    })
    .await;
    assert_eq!(app.smtp.messages().len(), 1, "only the code mail sent before the outage");

    // The relay is back: once their backoff ends, each waiting mail is delivered, once.
    app.smtp.set_refusing(false);
    app.mail_due(&format!("id > {}", 0)).await;
    // Only a failure waits this long: a busy machine may take a while to send both.
    let mails = app.smtp.wait_for(3, Duration::from_secs(60)).await;
    let mut to: Vec<String> = mails[1..].iter().flat_map(|m| m.to.clone()).collect();
    to.sort();
    assert_eq!(to, [NEW_RECIPIENT, SENDER]);
    let notification = mails.iter().find(|m| m.to == [NEW_RECIPIENT]).unwrap();
    assert!(notification.text().contains(&link), "the delivered notification carries the link shown");
    eventually(Duration::from_secs(5), "both mails marked sent", async || {
        db_state(app.db()).await.outbox.iter().all(|l| l.ends_with(" sent"))
    })
    .await;
    // A delivery pass of our own finds nothing left to send: a second send would need a row
    // still claimable, and there is none.
    let outbox = watasu::mail::outbox::Outbox::new(app.db().clone(), &app.state.secret_key);
    let again = outbox.deliver_due(app.state.mailer.as_ref(), 100).await.unwrap();
    assert_eq!(again.sent + again.failed + again.dead, 0, "{again:?}");
    assert_eq!(app.smtp.messages().len(), 3, "a mail was sent twice");

    // Nothing else changed: the first share was downloaded, the new one waits, and the
    // events are exactly what the people did.
    let after = db_state(app.db()).await;
    assert_eq!(after.users, before.users);
    assert_eq!(after.shares.len(), 2);
    assert!(after.shares[0].contains(" consumed consumed:"), "{:?}", after.shares);
    assert!(after.shares[1].contains(" active consumed:-"), "{:?}", after.shares);
    // The landing page's views within the hour are one entry.
    let mut kinds = event_kinds(app.db(), share.id).await;
    kinds.sort();
    let mut expected = vec!["opened", "code_sent", "code_mail_failed", "verified", "downloaded", "download_completed"];
    expected.sort();
    assert_eq!(kinds, expected);
}

both_backends!(with_the_relay_down_recipients_see_no_difference_and_every_queued_mail_arrives_later);
