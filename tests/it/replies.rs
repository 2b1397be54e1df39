//! Replies: when a share's sender allows it, its verified recipient answers with files from the
//! download page (before the claim, or after it during the grace). A reply is a request from the
//! sender to that recipient, granted at once to the session that proved the mailbox; anyone else
//! gets no button and is refused.

use std::time::Duration;

use crate::{
    both_backends,
    cli_output::env_of,
    file_requests::upload,
    handover_form::post_with,
    lifecycle::quiet_app,
    support::{Backend, Browser, PASSWORD, Page, RECIPIENT, TestApp, TestShare, count, process::run_watasu_fed},
};

const SENDER: &str = "sender@example.test";

async fn share(app: &TestApp, allow_reply: bool) -> TestShare {
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender).recipient(RECIPIENT).file("plan.pdf", b"%PDF plan");
    if allow_reply { share.allow_reply() } else { share }.create().await
}

/// Presses "Reply with a file" with `csrf`; answers the reply's own answer.
async fn press_reply(browser: &Browser, token: &str, csrf: &str) -> Page {
    browser.post_form(&format!("/s/{token}/reply"), &[("csrf_token", csrf)]).await
}

async fn replies(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM file_requests WHERE reply_to_share_id > $1", 0).await
}

/// The token of the reply a 303 leads to.
fn reply_token(answer: &Page) -> String {
    let location = answer.header("location").expect("a reply answers 303");
    location.strip_prefix("/s/").expect("to the reply's link").to_owned()
}

async fn the_verified_recipient_replies_uploads_and_the_sender_gets_the_files(backend: Backend) {
    let app = quiet_app(backend).await;
    let share = share(&app, true).await;
    let recipient = app.browser();
    let page = app.verify(&recipient, &share).await;
    assert_eq!(page.texts("[data-reply]").len(), 1, "{}", page.body);
    let csrf = page.csrf_token();

    let before = app.smtp.messages().len();
    let answer = press_reply(&recipient, &share.token, &csrf).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let token = reply_token(&answer);
    // No second code: this session proved the mailbox for the share it answers.
    let step = recipient.open_link(&token).await;
    assert_eq!(step.attr("#step", "data-step").as_deref(), Some("upload"), "{}", step.body);
    assert!(step.body.contains(&format!("share {}", share.id)), "the message names the share: {}", step.body);
    // Its link is mailed too, for another device.
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await;
    assert!(
        mails.iter().any(|m| m.to == [RECIPIENT] && m.text().contains(&format!("/s/{token}"))),
        "the link is mailed"
    );

    let uploaded = upload(&recipient, &token, &step.csrf_token(), &[("signed.pdf", b"%PDF signed")]).await;
    assert_eq!(uploaded.status, 303, "{}", uploaded.body);
    let before = app.smtp.messages().len();
    let finished = recipient.post_form(&format!("/s/{token}/finish"), &[("csrf_token", &step.csrf_token())]).await;
    assert_eq!(finished.status, 303, "{}", finished.body);
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await;
    let mail = mails.iter().find(|m| m.to == [SENDER]).expect("the sender is mailed as for a request");
    assert!(mail.text().contains("signed.pdf"), "{}", mail.text());

    // The sender sees it among the requests, linked to the share it answers.
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let list = sender.get("/requests").await;
    assert!(list.body.contains(RECIPIENT), "{}", list.body);
    let id = count(app.db(), "SELECT s.id FROM shares s JOIN file_requests r ON r.handover_id = s.handover_id WHERE r.reply_to_share_id = $1", share.id).await;
    let page = sender.get(&format!("/requests/{id}")).await;
    assert_eq!(page.attr("#request-state", "data-state").as_deref(), Some("answered"));
    assert_eq!(page.attr("a.reply-to", "href").as_deref(), Some(format!("/shares/{}", share.id).as_str()));
    let answered = sender.get(&format!("/shares/{}", share.id)).await;
    assert_eq!(answered.attr("a.replied", "href").as_deref(), Some(format!("/requests/{id}").as_str()));

    // One reply per share: a second press leads back to the share's page, which says so.
    let again = press_reply(&recipient, &share.token, &csrf).await;
    assert_eq!(again.header("location"), Some(format!("/s/{}", share.token).as_str()));
    let shown = recipient.open_link(&share.token).await;
    assert_eq!(shown.texts("[data-reply]").len(), 0);
    assert_eq!(shown.texts("[data-replied]").len(), 1, "{}", shown.body);
    assert_eq!(replies(&app).await, 1);
}

async fn without_the_senders_leave_there_is_no_button_and_a_reply_is_refused(backend: Backend) {
    let app = quiet_app(backend).await;
    let share = share(&app, false).await;
    let recipient = app.browser();
    let page = app.verify(&recipient, &share).await;
    assert_eq!(page.texts("[data-reply]").len(), 0, "{}", page.body);
    let refused = press_reply(&recipient, &share.token, &page.csrf_token()).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert_eq!(replies(&app).await, 0);
}

async fn a_stranger_or_another_recipient_of_the_handover_cannot_reply(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let shares = app
        .fake_share()
        .sender(sender)
        .recipient(RECIPIENT)
        .recipient("colleague@example.test")
        .allow_reply()
        .create_all()
        .await;
    let (mine, theirs) = (&shares[0], &shares[1]);

    // A stranger with the link: no grant, no button, and a refusal as for a download.
    let (stranger, csrf) = app.landed_browser(&mine.token).await;
    assert_eq!(stranger.open_link(&mine.token).await.texts("[data-reply]").len(), 0);
    assert_eq!(press_reply(&stranger, &mine.token, &csrf).await.status, 403);
    assert_eq!(press_reply(&app.browser(), &mine.token, "").await.status, 403);

    // The other recipient proved their own mailbox, for their own share only.
    let colleague = app.browser();
    let page = app.verify_as(&colleague, theirs, "colleague@example.test").await;
    assert_eq!(page.texts("[data-reply]").len(), 1, "their own share offers it");
    assert_eq!(press_reply(&colleague, &mine.token, &page.csrf_token()).await.status, 403);
    assert_eq!(replies(&app).await, 0);
}

async fn the_recipient_replies_after_downloading_during_the_grace(backend: Backend) {
    let app = quiet_app(backend).await;
    let share = share(&app, true).await;
    let (recipient, csrf) = app.verified_browser(&share).await;
    assert_eq!(recipient.download(&share.token, &csrf).await.status(), 200);

    let downloaded = recipient.open_link(&share.token).await;
    assert_eq!(downloaded.status, 410);
    assert_eq!(downloaded.texts("[data-reply]").len(), 1, "{}", downloaded.body);
    // Anyone else reads "already downloaded" without the button.
    assert_eq!(app.browser().open_link(&share.token).await.texts("[data-reply]").len(), 0);

    let answer = press_reply(&recipient, &share.token, &downloaded.csrf_token()).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let step = recipient.open_link(&reply_token(&answer)).await;
    assert_eq!(step.attr("#step", "data-step").as_deref(), Some("upload"), "{}", step.body);
}

async fn the_new_share_form_offers_replies_unticked_and_keeps_the_box_on_a_refused_form(backend: Backend) {
    let app = quiet_app(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let form = browser.get("/shares/new").await;
    assert_eq!(form.attrs("input[name=allow_reply]", "value"), ["1"], "{}", form.body);
    assert_eq!(form.attr("input[name=allow_reply]", "checked"), None, "replies are off by default");

    let ticked = [("recipient", "not-an-address"), ("allow_reply", "1")];
    let refused = post_with(&browser, &ticked, &[("a.pdf", b"first")]).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.attr("input[name=allow_reply]", "checked").as_deref(), Some(""), "what was ticked is kept");

    let made = post_with(&browser, &[("recipient", RECIPIENT), ("allow_reply", "1")], &[("a.pdf", b"first")]).await;
    assert_eq!(made.status, 303, "{}", made.body);
    let plain = post_with(&browser, &[("recipient", RECIPIENT)], &[("b.pdf", b"second")]).await;
    assert_eq!(plain.status, 303, "{}", plain.body);
    let allowed = count(app.db(), "SELECT count(*) FROM handovers WHERE allow_reply AND id > $1", 0).await;
    assert_eq!(allowed, 1, "only the ticked form's handover allows replies");
}

async fn share_create_with_allow_reply_lets_the_recipients_reply(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender(SENDER, "Sender Sato").await;
    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for flag in [Some("--allow-reply"), None] {
        let mut args = vec!["share", "create", "--from", SENDER, "--to", RECIPIENT, "--note", "the door code"];
        args.extend(flag);
        let (code, _, stderr) = tokio::task::block_in_place(|| run_watasu_fed(&args, &env, b""));
        assert_eq!(code, 0, "{stderr}");
    }
    let allowed = count(app.db(), "SELECT count(*) FROM handovers WHERE allow_reply AND id > $1", 0).await;
    let all = count(app.db(), "SELECT count(*) FROM handovers WHERE id > $1", 0).await;
    assert_eq!((allowed, all), (1, 2), "only the share made with --allow-reply allows replies");
}

both_backends!(
    the_verified_recipient_replies_uploads_and_the_sender_gets_the_files,
    without_the_senders_leave_there_is_no_button_and_a_reply_is_refused,
    a_stranger_or_another_recipient_of_the_handover_cannot_reply,
    the_recipient_replies_after_downloading_during_the_grace,
    share_create_with_allow_reply_lets_the_recipients_reply,
    the_new_share_form_offers_replies_unticked_and_keeps_the_box_on_a_refused_form,
);
