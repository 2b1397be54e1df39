//! Reading back the .eml files of the development mail folder (DATA_DIR/dev-mail), for the
//! development page that lets a newcomer try the whole flow without a mail server. Only what that page shows is decoded: the To and
//! Subject headers and the first text part.

use std::path::Path;

/// One mail as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxMail {
    pub to: String,
    pub subject: String,
    pub text: String,
}

/// The newest `limit` mails of the folder, newest first.
pub fn read_outbox(dir: &Path, limit: usize) -> std::io::Result<Vec<OutboxMail>> {
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    Ok(files
        .into_iter()
        .take(limit)
        .filter_map(|(_, path)| std::fs::read_to_string(path).ok())
        .map(|raw| parse(&raw))
        .collect())
}

/// Decodes the parts of a message the page needs. MIME is left to a maintained parser: folded
/// RFC 2047 words, charsets and transfer encodings have too many corners to hand-write.
pub fn parse(raw: &str) -> OutboxMail {
    let Some(message) = mail_parser::MessageParser::default().parse(raw) else {
        return OutboxMail { to: String::new(), subject: String::new(), text: String::new() };
    };
    let to = message.to().map(|to| to.iter().filter_map(|a| a.address()).collect::<Vec<_>>().join(", "));
    OutboxMail {
        to: to.unwrap_or_default(),
        subject: message.subject().unwrap_or_default().to_owned(),
        // Mail lines end in CRLF; the page shows them in a <pre>.
        text: message.body_text(0).map(|t| t.replace("\r\n", "\n").trim_end().to_owned()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        i18n::Lang,
        mail::{messages, origin::MailOrigin},
    };

    fn origin() -> MailOrigin {
        MailOrigin::new("watasu <w@example.test>".parse().unwrap(), &"https://x.test/".parse().unwrap())
    }

    #[test]
    fn a_japanese_code_mail_reads_back_decoded() {
        let from = origin();
        let message = messages::code_mail(&from, "r@example.test", Lang::Ja, "012345").unwrap();
        let mail = parse(&String::from_utf8(message.formatted()).unwrap());
        assert_eq!(mail.to, "r@example.test");
        assert_eq!(mail.subject, "watasu 確認コードのお知らせ");
        assert!(mail.text.contains("012345") && mail.text.contains("10分"), "{}", mail.text);
    }

    #[test]
    fn an_english_plain_mail_reads_back() {
        let from = origin();
        let message =
            messages::invitation_mail(&from, "n@example.test", Lang::En, "https://x.test/invite/abc").unwrap();
        let mail = parse(&String::from_utf8(message.formatted()).unwrap());
        assert_eq!(mail.subject, "You are invited to send files with watasu");
        assert!(mail.text.contains("https://x.test/invite/abc"), "{}", mail.text);
    }

    /// A subject long enough that lettre folds it into several encoded words, over one body.
    fn folded(encoding: lettre::message::header::ContentTransferEncoding, body: &str) -> OutboxMail {
        let subject = "経理部の佐藤花子さんから、二〇二六年十一月分の請求書と領収書の控えが届いています";
        let part = lettre::message::SinglePart::builder()
            .header(lettre::message::header::ContentType::TEXT_PLAIN)
            .header(encoding)
            .body(body.to_owned());
        let message = origin().builder("r@example.test", subject).unwrap().singlepart(part).unwrap();
        let raw = String::from_utf8(message.formatted()).unwrap();
        let words = raw.lines().filter(|l| l.contains("=?utf-8?b?")).count();
        assert!(words >= 2, "the subject was not folded: {raw}");
        let mail = parse(&raw);
        assert_eq!(mail.subject, subject);
        mail
    }

    #[test]
    fn a_folded_japanese_subject_and_a_quoted_printable_body_read_back_exactly() {
        let body = "こんにちは。\n= は等号、長い行は折り返されます。".repeat(4);
        let mail = folded(lettre::message::header::ContentTransferEncoding::QuotedPrintable, &body);
        assert_eq!(mail.text, body);
    }

    #[test]
    fn a_folded_japanese_subject_and_a_base64_body_read_back_exactly() {
        let body = "ファイルの受け取りをお願いします。\nSecond line in English.";
        let mail = folded(lettre::message::header::ContentTransferEncoding::Base64, body);
        assert_eq!(mail.text, body);
    }
}
