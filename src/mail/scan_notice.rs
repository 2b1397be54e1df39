//! The mail telling a sender that the virus scan refused a file they sent: which file and why,
//! that nobody was mailed, and where the share's page is.

use askama::Template;
use lettre::{Message, message::MultiPart};

use super::origin::MailOrigin;
use crate::i18n::{Lang, Text};

/// Facts the notice carries: each refused file with the scan's word on it.
pub struct ScanNotice<'a> {
    pub files: &'a [(String, String)],
    /// The share's page.
    pub link: &'a str,
}

#[derive(Template)]
#[template(path = "mail/scan_refused.txt")]
struct RefusedText<'a> {
    t: &'a Text,
    n: &'a ScanNotice<'a>,
}

#[derive(Template)]
#[template(path = "mail/scan_refused.html")]
struct RefusedHtml<'a> {
    t: &'a Text,
    lang: Lang,
    n: &'a ScanNotice<'a>,
    link: &'a str,
}

/// The notice to the sender, in their language. The scan's words lose the page's phrase marks.
pub fn scan_notice_mail(origin: &MailOrigin, to: &str, lang: Lang, n: &ScanNotice<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let files: Vec<(String, String)> =
        n.files.iter().map(|(name, why)| (crate::text::strip_invisible(name), why.replace('|', ""))).collect();
    let n = &ScanNotice { files: &files, ..*n };
    let text = RefusedText { t, n }.render()?;
    let html = RefusedHtml { t, lang, n, link: n.link }.render()?;
    Ok(origin
        .builder(to, t.dashboard.scan.mail_subject.to_owned())?
        .multipart(MultiPart::alternative_plain_html(text, html))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::ScanState;

    #[test]
    fn the_notice_names_each_refused_file_and_why_in_the_sender_s_language_without_phrase_marks() {
        let origin = MailOrigin::new("watasu <w@example.test>".parse().unwrap(), &"https://x.test/".parse().unwrap());
        for lang in Lang::ALL {
            let why = lang.text().dashboard.scan.mark(ScanState::Infected, Some("Eicar-Test-Signature"));
            let files = [("invoice.com".to_owned(), why.clone())];
            let notice = ScanNotice { files: &files, link: "https://x.test/shares/7" };
            let mail = scan_notice_mail(&origin, "s@example.test", lang, &notice).unwrap();
            let text = crate::mail::dev_outbox::parse(&String::from_utf8(mail.formatted()).unwrap()).text;
            assert!(text.contains(&format!("invoice.com: {}", why.replace('|', ""))), "{lang:?}: {text}");
            assert!(text.contains("https://x.test/shares/7"), "{lang:?}: {text}");
            assert!(!text.contains('|'), "{lang:?}: {text}");
        }
    }
}
