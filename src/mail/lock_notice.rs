//! The mail telling a sender that one of their shares locked after too many wrong codes: who and
//! which files, whether the codes came from one browser or several, and what each way out does.

use askama::Template;
use lettre::{Message, message::MultiPart};

use super::origin::MailOrigin;
use crate::i18n::{Lang, Text};

/// Facts the lock notice carries.
pub struct LockNotice<'a> {
    pub recipient: &'a str,
    /// The handover's file names, in order.
    pub files: &'a [String],
    /// The browsers that typed the wrong codes (see `ShareEvents::wrong_code_browsers`).
    pub browsers: i64,
    /// The share's page, where the sender unlocks it or sends a fresh link.
    pub link: &'a str,
}

impl LockNotice<'_> {
    /// Whether one browser or several typed the codes, in the reader's words (none when unknown).
    pub fn browsers_text(&self, t: &Text) -> String {
        browsers_text(t, self.browsers)
    }

    /// "File:" before the one file's name, or "Files (n):" before a line per name.
    pub fn files_label(&self, t: &Text) -> String {
        super::files_named::label(t, self.files)
    }
}

/// One browser or several, as the lock notice and the share page say it.
pub fn browsers_text(t: &Text, browsers: i64) -> String {
    match browsers {
        0 => String::new(),
        1 => t.dashboard.locked_one_browser.to_owned(),
        n => t.dashboard.locked_several_browsers.replace("{n}", &n.to_string()),
    }
}

#[derive(Template)]
#[template(path = "mail/locked.txt")]
struct LockedText<'a> {
    t: &'a Text,
    n: &'a LockNotice<'a>,
}

#[derive(Template)]
#[template(path = "mail/locked.html")]
struct LockedHtml<'a> {
    t: &'a Text,
    lang: Lang,
    n: &'a LockNotice<'a>,
    link: &'a str,
}

/// The lock notice to the sender, in their language.
pub fn lock_notice_mail(origin: &MailOrigin, to: &str, lang: Lang, n: &LockNotice<'_>) -> anyhow::Result<Message> {
    let t = lang.text();
    let files = super::files_named::cleaned(n.files);
    let n = &LockNotice { files: &files, ..*n };
    let text = LockedText { t, n }.render()?;
    let html = LockedHtml { t, lang, n, link: n.link }.render()?;
    let subject = t.mail.locked_subject.replace("{recipient}", n.recipient);
    Ok(origin.builder(to, subject)?.multipart(MultiPart::alternative_plain_html(text, html))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_browser_and_several_are_told_apart_in_both_languages() {
        for lang in Lang::ALL {
            let t = lang.text();
            assert_eq!(browsers_text(t, 0), "");
            assert_eq!(browsers_text(t, 1), t.dashboard.locked_one_browser);
            assert!(browsers_text(t, 3).contains('3'), "{lang:?}");
        }
    }
}
