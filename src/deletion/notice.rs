//! The final mail of a deletion case: the case reference and what happened in each store, in the
//! sender's language. It names no file, share or recipient.

use askama::Template;
use lettre::{Message, message::Mailbox};

use super::{Outcome, cases::StepRow};
use crate::i18n::{DeletionText, Lang, Text};

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
pub fn final_mail(from: &Mailbox, to: &str, lang: Lang, reference: &str, steps: &[StepRow]) -> anyhow::Result<Message> {
    let t = lang.text();
    let d = &t.deletion;
    let lines = steps
        .iter()
        .map(|s| {
            let outcome = if s.store == "account" { Outcome::Deleted } else { s.outcome() };
            (d.store(&s.store), d.outcome(outcome.code()))
        })
        .collect();
    let body = FinalText { t, d, reference, lines }.render()?;
    Ok(Message::builder()
        .from(from.clone())
        .to(to.parse()?)
        .subject(d.mail_subject)
        .header(lettre::message::header::ContentType::TEXT_PLAIN)
        .body(body)?)
}
