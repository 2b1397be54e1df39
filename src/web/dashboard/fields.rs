//! The new-share form's fields as they arrive, and their check into domain values.

use std::time::Duration;

use crate::{
    accounts::EmailAddress,
    i18n::Text,
    services::sharing::FinishedUpload,
    share::{
        Message, ShareTtl, TtlError,
        create::{MAX_FILES, MAX_RECIPIENTS},
        note::{NOTE_LIMIT, Note, NoteError},
    },
};

/// The text fields of the form.
#[derive(Default)]
pub(super) struct Fields {
    pub(super) csrf_token: Option<String>,
    /// The recipients' addresses as typed: several, separated by commas.
    pub(super) recipient: String,
    pub(super) expires_in: String,
    pub(super) message: String,
    pub(super) mail_lang: String,
    pub(super) notify: bool,
    /// The notification mail names the files and their sizes (on unless unticked).
    pub(super) name_file: bool,
    /// The recipients may reply with files (off unless ticked).
    pub(super) allow_reply: bool,
    /// The ids named in the `upload` fields (finished uploads: the script's, or kept by a form
    /// that came back), in order.
    pub(super) upload_ids: Vec<String>,
    /// Those uploads, once looked up, and the files of this form kept as uploads: what a form
    /// shown again keeps.
    pub(super) uploaded: Vec<FinishedUpload>,
    /// The addresses the sender said are right when asked about likely typos, comma-separated.
    pub(super) recipient_confirmed: String,
    /// The sender chose to send a secret note instead of files (the `kind` radio said `note`).
    pub(super) sends_note: bool,
    /// The note as typed, kept when the form comes back.
    pub(super) note: String,
}

/// The typed addresses one by one: commas separate them, and so do semicolons and line breaks
/// (pasted from a mail program or a list); spaces do not, so a slip is named whole.
pub(super) fn split_addresses(typed: &str) -> impl Iterator<Item = &str> {
    typed.split([',', ';', '\n', '\r']).map(str::trim).filter(|part| !part.is_empty())
}

impl Fields {
    /// The recipients that look mistyped and the sender has not said yet are right.
    pub(super) fn addresses_to_check(&self) -> Vec<EmailAddress> {
        let confirmed: Vec<&str> = split_addresses(&self.recipient_confirmed).collect();
        let mut asked: Vec<EmailAddress> = Vec::new();
        for address in split_addresses(&self.recipient).filter_map(|typed| EmailAddress::parse(typed).ok()) {
            if address.looks_mistyped() && !confirmed.contains(&address.as_str()) && !asked.contains(&address) {
                asked.push(address);
            }
        }
        asked
    }
}

/// The form's fields as domain values.
pub(super) struct Parsed {
    /// Each address once, in the order typed.
    pub(super) recipients: Vec<EmailAddress>,
    pub(super) message: Message,
    pub(super) ttl: ShareTtl,
    /// The secret note, when the sender chose to send one instead of files.
    pub(super) note: Option<Note>,
}

/// What is wrong with the fields: a message the form shows again (with the words that complete
/// it, where it names something), or a validity under a minute (which the form never offers),
/// answered with a plain 400.
pub(super) enum Invalid {
    Form(&'static str),
    Said(&'static str, String),
    TtlTooShort,
}

/// Checks the fields in the order the form reports them: recipients, files or note, message,
/// validity. `files` is how many files the form holds.
pub(super) fn parse_fields(
    t: &'static Text,
    fields: &Fields,
    files: usize,
    max_ttl: Duration,
) -> Result<Parsed, Invalid> {
    let recipients = parse_recipients(t, &fields.recipient)?;
    let note = if fields.sends_note { Some(parse_note(t, &fields.note, files)?) } else { None };
    if files == 0 && note.is_none() {
        return Err(Invalid::Form(t.dashboard.file_missing));
    }
    if files > MAX_FILES {
        return Err(too_many_files(t, files));
    }
    let message = Message::parse(&fields.message).map_err(|_| Invalid::Form(t.dashboard.message_too_long))?;
    let ttl =
        crate::config::parse_duration(&fields.expires_in).map_err(|_| Invalid::Form(t.errors.bad_request.title))?;
    let ttl = ShareTtl::parse(ttl, max_ttl).map_err(|error| match error {
        TtlError::TooShort => Invalid::TtlTooShort,
        TtlError::TooLong(_) => Invalid::Form(t.errors.bad_request.title),
    })?;
    Ok(Parsed { recipients, message, ttl, note })
}

/// The note of a form that sends one: with no file beside it, neither empty nor over the limit.
fn parse_note(t: &'static Text, typed: &str, files: usize) -> Result<Note, Invalid> {
    let n = &t.dashboard.note;
    if files > 0 {
        return Err(Invalid::Form(n.note_with_files));
    }
    Note::parse(typed).map_err(|error| match error {
        NoteError::Empty => Invalid::Form(n.note_empty),
        NoteError::TooLong { .. } => Invalid::Said(n.note_too_long, n.note_too_long.replace("{limit}", &note_limit())),
    })
}

/// The note's limit in words: "4 KiB".
pub(super) fn note_limit() -> String {
    format!("{} KiB", NOTE_LIMIT / 1024)
}

/// The refusal of a form holding `count` files, over the most a share may hold.
pub(super) fn too_many_files(t: &'static Text, count: usize) -> Invalid {
    let words = t.dashboard.handover.too_many_files;
    Invalid::Said(words, words.replace("{count}", &count.to_string()).replace("{max}", &MAX_FILES.to_string()))
}

/// Every typed address, each checked on its own: the first that is not one is named.
fn parse_recipients(t: &'static Text, typed: &str) -> Result<Vec<EmailAddress>, Invalid> {
    let h = &t.dashboard.handover;
    let mut recipients: Vec<EmailAddress> = Vec::new();
    for part in split_addresses(typed) {
        let address = EmailAddress::parse(part)
            .map_err(|_| Invalid::Said(h.recipient_invalid, h.recipient_invalid.replace("{address}", part)))?;
        if !recipients.contains(&address) {
            recipients.push(address);
        }
    }
    match recipients.len() {
        0 => Err(Invalid::Form(t.auth.email_invalid)),
        count if count > MAX_RECIPIENTS => Err(Invalid::Said(
            h.too_many_recipients,
            h.too_many_recipients.replace("{count}", &count.to_string()).replace("{max}", &MAX_RECIPIENTS.to_string()),
        )),
        _ => Ok(recipients),
    }
}

#[cfg(test)]
mod tests {
    use super::split_addresses;

    #[test]
    fn addresses_are_separated_by_commas_semicolons_or_lines_and_a_slip_stays_whole() {
        let typed = " a@example.test, b@example.test\r\nc@example.test;;not an address ,";
        let parts: Vec<&str> = split_addresses(typed).collect();
        assert_eq!(parts, ["a@example.test", "b@example.test", "c@example.test", "not an address"]);
    }
}
