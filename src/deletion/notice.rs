//! The final mail of a deletion case: the case reference and what happened in each store, in the
//! sender's language. It names no file, share or recipient.

use askama::Template;
use lettre::{Message, message::header::ContentType};

use super::{Outcome, Store, cases::StepRow};
use crate::{
    i18n::{DeletionText, Lang, Text},
    mail::origin::MailOrigin,
};

#[derive(Template)]
#[template(path = "mail/deletion.txt")]
struct FinalText<'a> {
    t: &'a Text,
    d: &'a DeletionText,
    reference: &'a str,
    lines: Vec<(&'static str, &'static str)>,
}

/// Builds the mail. The account step is still pending when it is written (the row goes right
/// after), so it is reported as deleted: the case cannot complete otherwise.
pub fn final_mail(
    origin: &MailOrigin,
    to: &str,
    lang: Lang,
    reference: &str,
    steps: &[StepRow],
) -> anyhow::Result<Message> {
    let t = lang.text();
    let d = &t.admin.deletion;
    let lines = steps
        .iter()
        .map(|s| {
            let outcome = if s.store == Store::Account { Outcome::Deleted } else { s.outcome() };
            (d.store(s.store), d.outcome(outcome))
        })
        .collect();
    let body = FinalText { t, d, reference, lines }.render()?;
    // Text only: the mail has no link, so an HTML part would add nothing.
    Ok(origin.builder(to, d.mail_subject)?.header(ContentType::TEXT_PLAIN).body(body)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deletion_notice_is_automatic_and_has_nobody_to_answer() {
        let origin = MailOrigin::new(
            "watasu <w@example.test>".parse().unwrap(),
            &"https://files.example.test/".parse().unwrap(),
        );
        let mail = final_mail(&origin, "s@example.test", Lang::Ja, "DEL-0001", &[]).unwrap();
        let raw = String::from_utf8(mail.formatted()).unwrap();
        let headers = raw.split_once("\r\n\r\n").unwrap().0;
        assert!(headers.lines().any(|l| l == "Auto-Submitted: auto-generated"), "{headers}");
        assert!(
            headers.lines().any(|l| l.starts_with("Message-ID: <") && l.ends_with("@files.example.test>")),
            "{headers}"
        );
        assert!(!headers.contains("Reply-To"), "{headers}");
    }
}
