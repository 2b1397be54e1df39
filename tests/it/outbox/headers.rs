//! The headers every mail carries: a Message-ID of its own in the base URL's domain,
//! `Auto-Submitted: auto-generated`, a Reply-To that reaches the sender on the notification and
//! none on the others; no link token or code in any header; the sender's address in the body.

use std::collections::HashSet;

use watasu::{
    accounts::{Role, User},
    services::mails::Delivery,
};

use super::*;
use crate::support::{Backend, PASSWORD, SmtpSink, recipient::RECIPIENT};

/// One received mail read by a real MIME parser, with its raw header block.
struct Headers {
    raw: String,
    message_id: String,
    auto_submitted: Option<String>,
    reply_to: Option<String>,
}

fn headers(data: &str) -> Headers {
    let raw = data.split_once("\r\n\r\n").expect("a header block").0.to_owned();
    let parsed = mail_parser::MessageParser::default().parse(data).expect("a parsable mail");
    let reply_to = parsed.reply_to().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_owned);
    Headers {
        message_id: parsed.message_id().expect("a Message-ID").to_owned(),
        auto_submitted: parsed.header_raw("Auto-Submitted").map(|v| v.trim().to_owned()),
        reply_to,
        raw,
    }
}

/// The checks every kind passes; `secrets` must appear in no header, decoded or not.
fn assert_common(kind: &str, h: &Headers, host: &str, secrets: &[&str]) {
    let (local, domain) = h.message_id.split_once('@').unwrap_or_else(|| panic!("{kind}: {}", h.message_id));
    assert_eq!(domain, host, "{kind}: the Message-ID is not in the base URL's domain");
    assert!(local.len() == 32 && local.bytes().all(|b| b.is_ascii_hexdigit()), "{kind}: {}", h.message_id);
    assert_eq!(h.auto_submitted.as_deref(), Some("auto-generated"), "{kind}");
    let decoded = watasu::mail::dev_outbox::parse(&h.raw).subject;
    for secret in secrets {
        assert!(!h.raw.contains(secret) && !decoded.contains(secret), "{kind}: a header holds {secret}");
    }
}

/// The mail the sink received last that `pick` accepts.
fn last(smtp: &SmtpSink, pick: impl Fn(&crate::support::smtp::ReceivedMail) -> bool) -> String {
    smtp.messages().into_iter().rev().find(pick).expect("the mail arrived").data
}

async fn every_mail_is_automatic_with_its_own_message_id_and_only_the_notification_answers_the_sender(
    backend: Backend,
) {
    let app = TestApp::spawn(backend).await;
    let host = app.state.config.base_url.host_str().unwrap().to_owned();
    let share = app.create_share().await;
    let sender = User {
        id: share.sender_id,
        email: "sato@example.test".to_owned(),
        display_name: "Sender Sato".to_owned(),
        role: Role::Sender,
        lang: Lang::En,
        disabled: false,
    };
    let link = app.state.config.url_for(&format!("/s/{}", share.token));

    let notice = app.state.services.mails.notify_recipient(share.id, &sender, &link, Lang::En, Delivery::Now).await;
    assert!(matches!(notice, watasu::services::mails::Notice::Tried(Some(_))), "{notice:?}");
    let notification = last(&app.smtp, |m| m.data.contains("Reply-To"));
    let (browser, csrf) = app.verified_browser(&share).await;
    let code_mail = app.smtp.messages().into_iter().rev().find(|m| m.code().is_some()).unwrap();
    let code = code_mail.code().unwrap();
    let response = browser.download(&share.token, &csrf).await;
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let receipt = app.smtp.wait_for(3, Duration::from_secs(10)).await.pop().unwrap();
    assert!(receipt.to[0].starts_with("sender-"), "{:?}", receipt.to);
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let invite_path = app.invite(&admin, "new@example.test").await;
    let invitation = last(&app.smtp, |m| m.to == ["new@example.test"]);
    let invite_token = invite_path.trim_start_matches("/invite/");

    let secrets = [share.token.as_str(), code.as_str(), invite_token];
    let mails = [
        ("notification", &notification),
        ("code", &code_mail.data),
        ("receipt", &receipt.data),
        ("invitation", &invitation),
    ];
    let mut ids = HashSet::new();
    for (kind, data) in mails {
        let h = headers(data);
        assert_common(kind, &h, &host, &secrets);
        assert!(ids.insert(h.message_id.clone()), "{kind} repeats a Message-ID");
        let expected_reply_to = (kind == "notification").then_some("sato@example.test");
        assert_eq!(h.reply_to.as_deref(), expected_reply_to, "{kind}: {}", h.raw);
    }
    assert_eq!(code_mail.to, [RECIPIENT]);

    // The sender's address beside their name, in the text and in the HTML part.
    let parsed = mail_parser::MessageParser::default().parse(&notification).unwrap();
    assert!(parsed.body_text(0).unwrap().contains("Sender Sato (sato@example.test) has sent you a file."));
    let html = scraper::Html::parse_document(&parsed.body_html(0).unwrap());
    let line = html.select(&scraper::Selector::parse("p").unwrap()).next().unwrap().text().collect::<String>();
    assert_eq!(line, "Sender Sato (sato@example.test) has sent you a file.");
}

both_backends!(every_mail_is_automatic_with_its_own_message_id_and_only_the_notification_answers_the_sender);
