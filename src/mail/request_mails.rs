//! The two mails of a file request: the link to the uploader (as from the sender, who gets the
//! answer), and the sender's news that the files arrived, with their digests.

use askama::Template;
use lettre::{
    Message,
    message::{Mailbox, MultiPart},
};

use super::origin::MailOrigin;
use crate::{
    i18n::{Lang, Text},
    text::{strip_invisible, strip_invisible_keeping_lines},
};

/// Facts the uploader's mail carries.
pub struct RequestMail<'a> {
    pub sender_name: &'a str,
    pub sender_email: &'a str,
    pub message: &'a str,
    pub link: &'a str,
    pub expires: &'a str,
}

#[derive(Template)]
#[template(path = "mail/request.txt")]
struct RequestText<'a> {
    t: &'a Text,
    m: &'a RequestMail<'a>,
    body: String,
}

#[derive(Template)]
#[template(path = "mail/request.html")]
struct RequestHtml<'a> {
    t: &'a Text,
    lang: Lang,
    m: &'a RequestMail<'a>,
    body: String,
    subject: String,
}

/// The mail that asks the uploader for files, in the request's language; an answer goes to the
/// sender.
pub fn request_mail(origin: &MailOrigin, to: &str, lang: Lang, m: &RequestMail<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let sender_name: String = strip_invisible(m.sender_name).chars().filter(|c| !c.is_control()).take(64).collect();
    let message = strip_invisible_keeping_lines(m.message);
    let m = &RequestMail { sender_name: &sender_name, message: &message, ..*m };
    let subject = t.request.mail_subject.replace("{sender}", m.sender_name);
    let body = t.request.mail_body.replace("{sender}", m.sender_name).replace("{email}", m.sender_email);
    let text = RequestText { t, m, body: body.clone() }.render()?;
    let html = RequestHtml { t, lang, m, body, subject: subject.clone() }.render()?;
    let mut builder = origin.builder_as(&sender_name, to, subject)?;
    match m.sender_email.parse() {
        Ok(address) => builder = builder.reply_to(Mailbox::new(Some(sender_name.clone()), address)),
        Err(error) => tracing::warn!(%error, "the sender's address cannot be a Reply-To"),
    }
    Ok(builder.multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Facts the sender's arrival mail carries; the time already written out in their language.
pub struct Arrived<'a> {
    /// The address the uploader proved with a code.
    pub uploader: &'a str,
    /// Each file's name and SHA-256, in order.
    pub files: &'a [(String, String)],
    pub note: &'a str,
    pub kept_until: &'a str,
    /// The request's page.
    pub link: &'a str,
}

#[derive(Template)]
#[template(path = "mail/arrived.txt")]
struct ArrivedText<'a> {
    t: &'a Text,
    a: &'a Arrived<'a>,
    body: String,
}

#[derive(Template)]
#[template(path = "mail/arrived.html")]
struct ArrivedHtml<'a> {
    t: &'a Text,
    lang: Lang,
    a: &'a Arrived<'a>,
    body: String,
    subject: String,
}

/// Tells the sender the files they asked for arrived, from whom, and their digests.
pub fn arrived_mail(origin: &MailOrigin, to: &str, lang: Lang, a: &Arrived<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let subject = t.request.arrived_subject.replace("{uploader}", a.uploader);
    let body = t.request.arrived_body.replace("{uploader}", a.uploader);
    let text = ArrivedText { t, a, body: body.clone() }.render()?;
    let html = ArrivedHtml { t, lang, a, body, subject: subject.clone() }.render()?;
    Ok(origin.builder(to, subject)?.multipart(MultiPart::alternative_plain_html(text, html))?)
}
