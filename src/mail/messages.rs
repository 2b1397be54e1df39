//! The messages watasu sends, each as plain text plus HTML in one language.

use askama::Template;
use lettre::{
    Message,
    message::{Mailbox, MultiPart},
};

use crate::i18n::{Lang, Text};

#[derive(Template)]
#[template(path = "mail/code.txt")]
struct CodeText<'a> {
    t: &'a Text,
    code: &'a str,
}

#[derive(Template)]
#[template(path = "mail/code.html")]
struct CodeHtml<'a> {
    t: &'a Text,
    lang: Lang,
    code: &'a str,
}

#[derive(Template)]
#[template(path = "mail/notify.txt")]
struct NotifyText<'a> {
    t: &'a Text,
    sender: &'a str,
    message: &'a str,
    link: &'a str,
    expires: &'a str,
}

#[derive(Template)]
#[template(path = "mail/notify.html")]
struct NotifyHtml<'a> {
    t: &'a Text,
    lang: Lang,
    sender: &'a str,
    message: &'a str,
    link: &'a str,
    expires: &'a str,
}

/// The one-time code mail. It never names the file: the mailbox may be read by others.
pub fn code_mail(from: &Mailbox, to: &str, lang: Lang, code: &str) -> anyhow::Result<Message> {
    let t = lang.text();
    let text = CodeText { t, code }.render()?;
    let html = CodeHtml { t, lang, code }.render()?;
    Ok(Message::builder()
        .from(from.clone())
        .to(to.parse()?)
        .subject(t.mail_code_subject)
        .multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Facts the notification mail carries.
pub struct Notification<'a> {
    pub sender_name: &'a str,
    pub message: &'a str,
    pub link: &'a str,
    pub expires: &'a str,
}

/// The mail that tells the recipient a file is waiting, in the share's language.
pub fn notification_mail(from: &Mailbox, to: &str, lang: Lang, n: &Notification<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let (sender_name, message) =
        (crate::text::strip_invisible(n.sender_name), crate::text::strip_invisible_keeping_lines(n.message));
    let n = &Notification { sender_name: &sender_name, message: &message, ..*n };
    let text =
        NotifyText { t, sender: n.sender_name, message: n.message, link: n.link, expires: n.expires }.render()?;
    let html =
        NotifyHtml { t, lang, sender: n.sender_name, message: n.message, link: n.link, expires: n.expires }.render()?;
    // The display name is the sender's own text: keep it out of the header's structure.
    let subject: String = format!("{}{}{}", t.sent_by_before, n.sender_name, t.mail_notify_subject_after)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    Ok(Message::builder()
        .from(from.clone())
        .to(to.parse()?)
        .subject(subject)
        .multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Facts the download receipt carries; the times already written out in the sender's language.
pub struct Receipt<'a> {
    pub recipient: &'a str,
    pub file_name: &'a str,
    pub started: &'a str,
    pub completed: &'a str,
}

#[derive(Template)]
#[template(path = "mail/receipt.txt")]
struct ReceiptText<'a> {
    t: &'a Text,
    r: &'a Receipt<'a>,
}

#[derive(Template)]
#[template(path = "mail/receipt.html")]
struct ReceiptHtml<'a> {
    t: &'a Text,
    lang: Lang,
    r: &'a Receipt<'a>,
}

/// Tells the sender that their file was downloaded to the end (the thing senders ask for most).
pub fn receipt_mail(from: &Mailbox, to: &str, lang: Lang, receipt: &Receipt<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let file_name = crate::text::strip_invisible(receipt.file_name);
    let r = &Receipt { file_name: &file_name, ..*receipt };
    let text = ReceiptText { t, r }.render()?;
    let html = ReceiptHtml { t, lang, r }.render()?;
    Ok(Message::builder()
        .from(from.clone())
        .to(to.parse()?)
        .subject(t.mail_receipt_subject)
        .multipart(MultiPart::alternative_plain_html(text, html))?)
}

#[derive(Template)]
#[template(path = "mail/invite.txt")]
struct InviteText<'a> {
    t: &'a Text,
    link: &'a str,
}

/// The invitation to choose a password (plain text: one link, nothing to format).
pub fn invitation_mail(from: &Mailbox, to: &str, lang: Lang, link: &str) -> anyhow::Result<Message> {
    let t = lang.text();
    Ok(Message::builder()
        .from(from.clone())
        .to(to.parse()?)
        .subject(t.mail_invite_subject)
        .header(lettre::message::header::ContentType::TEXT_PLAIN)
        .body(InviteText { t, link }.render()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from() -> Mailbox {
        "watasu <watasu@example.test>".parse().unwrap()
    }

    #[test]
    fn the_code_mail_carries_the_code_and_not_the_file() {
        let mail = code_mail(&from(), "r@example.test", Lang::En, "012345").unwrap();
        let raw = String::from_utf8(mail.formatted()).unwrap();
        assert!(raw.contains("012345"));
        assert!(raw.contains("10 minutes"));
    }

    #[test]
    fn a_hostile_sender_name_cannot_inject_headers_or_markup() {
        let n = Notification {
            sender_name: "Eve\r\nBcc: victim@example.test",
            message: "<script>alert(1)</script>",
            link: "https://x.test/s/abc",
            expires: "soon",
        };
        let mail = notification_mail(&from(), "r@example.test", Lang::En, &n).unwrap();
        let raw = String::from_utf8(mail.formatted()).unwrap();
        let (headers, body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(!headers.lines().any(|l| l.starts_with("Bcc:")), "{headers}");
        let html = body.split("Content-Type: text/html").nth(1).unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&#60;script&#62;"), "the message was dropped instead of escaped: {html}");
    }
}
