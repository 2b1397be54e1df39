//! The messages watasu sends, each as plain text plus HTML in one language.

use askama::Template;
use lettre::{
    Message,
    message::{Mailbox, MultiPart},
};

use super::origin::MailOrigin;
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
    n: &'a Notification<'a>,
}

#[derive(Template)]
#[template(path = "mail/notify.html")]
struct NotifyHtml<'a> {
    t: &'a Text,
    lang: Lang,
    n: &'a Notification<'a>,
}

/// The one-time code mail. It never names the file: the mailbox may be read by others. No
/// Reply-To: nobody should answer a code.
pub fn code_mail(origin: &MailOrigin, to: &str, lang: Lang, code: &str) -> anyhow::Result<Message> {
    let t = lang.text();
    let text = CodeText { t, code }.render()?;
    let html = CodeHtml { t, lang, code }.render()?;
    Ok(origin.builder(to, t.mail.code_subject)?.multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Facts the notification mail carries.
pub struct Notification<'a> {
    pub sender_name: &'a str,
    /// Shown beside the name (a recipient can tell a real share from a copy) and the Reply-To.
    pub sender_email: &'a str,
    pub message: &'a str,
    pub link: &'a str,
    pub expires: &'a str,
    /// The files' names and sizes, written out, in order; none when the sender asked the mail to
    /// name none. At most [`FILES_LISTED`] are listed, then how many more.
    pub files: &'a [(&'a str, &'a str)],
    /// How many files the handover holds (said alone when their names are not).
    pub file_count: usize,
}

/// Files a notification mail lists by name: a longer list reads as noise, and the page after the
/// code lists them all.
pub const FILES_LISTED: usize = 10;

impl Notification<'_> {
    /// "and 3 more" after the listed files; empty when all are listed.
    fn more_files(&self, t: &Text) -> String {
        match self.file_count.saturating_sub(self.files.len()) {
            0 => String::new(),
            more => t.mail.notify_more_files.replace("{n}", &more.to_string()),
        }
    }

    /// "3 files" when the names are not given and there are several.
    fn count_only(&self, t: &Text) -> String {
        match (self.files.is_empty(), self.file_count) {
            (true, 2..) => t.mail.notify_file_count.replace("{n}", &self.file_count.to_string()),
            _ => String::new(),
        }
    }
}

/// The mail that tells the recipient a file is waiting, in the share's language. An answer goes
/// to the sender, not to watasu's From address that nobody reads.
pub fn notification_mail(origin: &MailOrigin, to: &str, lang: Lang, n: &Notification<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    // The display name is the sender's own text: keep it out of the headers' structure (lettre
    // quotes and encodes what is left).
    let sender_name: String =
        crate::text::strip_invisible(n.sender_name).chars().filter(|c| !c.is_control()).take(64).collect();
    let names: Vec<String> =
        n.files.iter().take(FILES_LISTED).map(|(name, _)| crate::text::strip_invisible(name)).collect();
    let message = crate::text::strip_invisible_keeping_lines(n.message);
    let files: Vec<(&str, &str)> = names.iter().zip(n.files).map(|(name, (_, size))| (name.as_str(), *size)).collect();
    let file_count = n.file_count.max(n.files.len());
    let n = &Notification { sender_name: &sender_name, message: &message, files: &files, file_count, ..*n };
    let text = NotifyText { t, n }.render()?;
    let html = NotifyHtml { t, lang, n }.render()?;
    let subject = format!("{}{}{}", t.recipient.sent_by_before, n.sender_name, t.mail.notify_subject_after);
    let mut builder = origin.builder_as(&sender_name, to, subject)?;
    // An address lettre cannot write in a header (accounts accept a wider set) loses the
    // Reply-To, not the mail: the recipient still gets the link.
    match n.sender_email.parse() {
        Ok(address) => builder = builder.reply_to(Mailbox::new(Some(sender_name.clone()), address)),
        Err(error) => tracing::warn!(%error, "the sender's address cannot be a Reply-To"),
    }
    Ok(builder.multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Facts the download receipt carries; the times already written out in the sender's language.
pub struct Receipt<'a> {
    pub recipient: &'a str,
    /// The handover's file names, in order.
    pub files: &'a [String],
    pub started: &'a str,
    pub completed: &'a str,
    /// The share's page.
    pub link: &'a str,
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
    link: &'a str,
}

impl ReceiptHtml<'_> {
    fn subject(&self) -> String {
        receipt_subject(self.t, self.r)
    }
}

/// Tells the sender that their file was downloaded to the end (the thing senders ask for most).
pub fn receipt_mail(origin: &MailOrigin, to: &str, lang: Lang, receipt: &Receipt<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let files = super::files_named::cleaned(receipt.files);
    let r = &Receipt { files: &files, ..*receipt };
    let text = ReceiptText { t, r }.render()?;
    let html = ReceiptHtml { t, lang, r, link: r.link }.render()?;
    Ok(origin.builder(to, receipt_subject(t, r))?.multipart(MultiPart::alternative_plain_html(text, html))?)
}

/// Who received which file, so the receipt says it before it is opened.
fn receipt_subject(t: &Text, r: &Receipt<'_>) -> String {
    if r.is_note() {
        return t.mail.note_receipt_subject.replace("{recipient}", r.recipient);
    }
    t.mail
        .receipt_subject
        .replace("{recipient}", r.recipient)
        .replace("{file}", &super::files_named::in_subject(t, r.files))
}

impl Receipt<'_> {
    /// The handover was a secret note (no file): it was read, not downloaded.
    pub fn is_note(&self) -> bool {
        self.files.is_empty()
    }

    /// The receipt's first words.
    pub fn body(&self, t: &Text) -> &'static str {
        if self.is_note() { t.mail.note_receipt_body } else { t.mail.receipt_body }
    }

    /// "File:" before the one file's name, or "Files (n):" before a line per name.
    pub fn files_label(&self, t: &Text) -> String {
        super::files_named::label(t, self.files)
    }
}

#[derive(Template)]
#[template(path = "mail/invite.txt")]
struct InviteText<'a> {
    t: &'a Text,
    link: &'a str,
}

#[derive(Template)]
#[template(path = "mail/invite.html")]
struct InviteHtml<'a> {
    t: &'a Text,
    lang: Lang,
    link: &'a str,
}

/// The invitation to choose a password; its HTML part is there for the button.
pub fn invitation_mail(origin: &MailOrigin, to: &str, lang: Lang, link: &str) -> anyhow::Result<Message> {
    let t = lang.text();
    let text = InviteText { t, link }.render()?;
    let html = InviteHtml { t, lang, link }.render()?;
    Ok(origin.builder(to, t.mail.invite_subject)?.multipart(MultiPart::alternative_plain_html(text, html))?)
}

#[derive(Template)]
#[template(path = "mail/wrong_codes.txt")]
struct WrongCodesText<'a> {
    t: &'a Text,
    body: &'a str,
}

#[derive(Template)]
#[template(path = "mail/wrong_codes.html")]
struct WrongCodesHtml<'a> {
    t: &'a Text,
    lang: Lang,
    body: &'a str,
}

/// Tells an account's owner that a sign-in with their password ended on wrong codes.
pub fn wrong_codes_mail(origin: &MailOrigin, to: &str, lang: Lang, tries: i64) -> anyhow::Result<Message> {
    let t = lang.text();
    let body = t.auth.second_factor.mail_wrong_codes_body.replace("{n}", &tries.to_string());
    let text = WrongCodesText { t, body: &body }.render()?;
    let html = WrongCodesHtml { t, lang, body: &body }.render()?;
    let subject = t.auth.second_factor.mail_wrong_codes_subject;
    Ok(origin.builder(to, subject)?.multipart(MultiPart::alternative_plain_html(text, html))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from() -> MailOrigin {
        MailOrigin::new("watasu <watasu@example.test>".parse().unwrap(), &"https://x.test/".parse().unwrap())
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
            sender_email: "eve@example.test",
            message: "<script>alert(1)</script>",
            link: "https://x.test/s/abc",
            expires: "soon",
            files: &[("<b>x</b>.pdf", "1 KB")],
            file_count: 1,
        };
        let mail = notification_mail(&from(), "r@example.test", Lang::En, &n).unwrap();
        let raw = String::from_utf8(mail.formatted()).unwrap();
        let (headers, body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(!headers.lines().any(|l| l.starts_with("Bcc:")), "{headers}");
        let from_line = headers.lines().find(|l| l.starts_with("From:")).unwrap();
        assert!(from_line.ends_with("<watasu@example.test>"), "the From address is not ours: {from_line}");
        let html = body.split("Content-Type: text/html").nth(1).unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&#60;script&#62;"), "the message was dropped instead of escaped: {html}");
        assert!(!html.contains("<b>x</b>"), "{html}");
    }
}
