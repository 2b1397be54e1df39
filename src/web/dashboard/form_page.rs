//! The new-share form as a page: the validities on offer (the configured default selected), the
//! limits (files per share, their size together), every value the sender typed, the uploads it
//! keeps, and an error shown at its own field.

use std::time::Duration;

use askama::Template;

use super::new_share::Fields;
use crate::{
    i18n::{Lang, Text, format::human_size},
    services::sharing::FinishedUpload,
    share::{
        create::{MAX_FILES, MAX_RECIPIENTS},
        note::NOTE_LIMIT,
    },
    web::{AppState, Chrome},
};

pub struct ExpiryOption {
    value: String,
    label: String,
    selected: bool,
}

/// A validity the presets do not name, in words: "3 days", "36 hours".
fn duration_label(lang: Lang, duration: Duration) -> String {
    let s = &lang.text().dashboard;
    let secs = duration.as_secs();
    let (count, words) = match secs {
        _ if secs.is_multiple_of(86_400) => (secs / 86_400, s.duration_days),
        _ if secs.is_multiple_of(3_600) => (secs / 3_600, s.duration_hours),
        _ => (secs.div_ceil(60), s.duration_minutes),
    };
    words.replace("{n}", &count.to_string())
}

/// 1 hour, 1 day, 7 days, the configured default and the configured maximum, as far as the
/// maximum allows; `chosen` is selected (the default when the form is new).
fn expiry_options(c: &Chrome, max: Duration, default: Duration, chosen: &str) -> Vec<ExpiryOption> {
    let t = c.t;
    let presets = [
        ("1h", 3_600, t.dashboard.expires_1h),
        ("1d", 86_400, t.dashboard.expires_1d),
        ("7d", 604_800, t.dashboard.expires_7d),
    ];
    let mut options: Vec<(Duration, String, String)> = presets
        .into_iter()
        .map(|(value, secs, label)| (Duration::from_secs(secs), value.to_owned(), label.to_owned()))
        .filter(|(duration, _, _)| *duration <= max)
        .collect();
    for (extra, label) in [(default, duration_label(c.lang, default)), (max, t.dashboard.expires_max.to_owned())] {
        let value = crate::config::format_duration(extra);
        if extra <= max && !options.iter().any(|(duration, _, _)| *duration == extra) {
            options.push((extra, value, label));
        }
    }
    options.sort_by_key(|(duration, _, _)| *duration);
    let mut options: Vec<ExpiryOption> =
        options.into_iter().map(|(_, value, label)| ExpiryOption { selected: value == chosen, value, label }).collect();
    if !options.iter().any(|o| o.selected)
        && let Some(first) = options.first_mut()
    {
        first.selected = true;
    }
    options
}

#[derive(Template)]
#[template(path = "dashboard/new_share.html")]
pub(super) struct NewSharePage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    expiry_options: Vec<ExpiryOption>,
    max_size: String,
    max_bytes: u64,
    recipient: &'a str,
    message: &'a str,
    mail_lang: &'a str,
    notify: bool,
    name_file: bool,
    allow_reply: bool,
    error: Option<&'static str>,
    /// The field the error is about (`recipient`, `file`, `note`, `message`, `expires_in`);
    /// `None` for an error about the whole form, shown above it.
    error_field: Option<&'static str>,
    /// The finished uploads the form keeps (the file input is then optional), each with its size.
    uploaded: Vec<(&'a FinishedUpload, String)>,
    /// The error in full where it names something (the limit and the files' size, a bad address).
    error_said: Option<String>,
    /// The recipients that look mistyped, asked about before anything is created.
    address_check: Vec<String>,
    /// The recipients the sender said are right, sent again with the form.
    recipient_confirmed: &'a str,
    /// "Separate several addresses with commas (up to 20)…"
    recipients_hint: String,
    /// "Up to 100 files, 2.1 GB in all."
    files_hint: String,
    max_files: usize,
    /// Room for every address a share may name, with their separators.
    recipients_max_chars: usize,
    /// The sender chose a secret note instead of files.
    sends_note: bool,
    note: &'a str,
    /// "At most 4 KiB: … shown once … then destroyed."
    note_hint: String,
    note_max_bytes: usize,
}

impl NewSharePage<'_> {
    /// The error belongs to this field: it is shown there and the field is marked invalid.
    fn invalid(&self, field: &str) -> bool {
        self.error_field == Some(field)
    }

    /// A form of files shown again without a kept upload: the browser has dropped the chosen files.
    fn file_lost(&self) -> bool {
        (self.error.is_some() || !self.address_check.is_empty()) && self.uploaded.is_empty() && !self.sends_note
    }

    /// The error as shown: in full where it names something.
    fn said(&self) -> &str {
        self.error_said.as_deref().or(self.error).unwrap_or_default()
    }

    /// The addresses said to be right so far and those asked about now, as the hidden field
    /// carries them: a "yes" covers them all.
    fn asked(&self) -> String {
        let before = super::fields::split_addresses(self.recipient_confirmed).map(str::to_owned);
        before.chain(self.address_check.iter().cloned()).collect::<Vec<_>>().join(", ")
    }

    /// The error said as `said`, with what the catalogue's fixed words cannot hold.
    pub(super) fn saying(mut self, said: String) -> Self {
        self.error_said = Some(said);
        self
    }

    /// The form asking "is this address right?" about `addresses`, with every value kept.
    pub(super) fn asking_about(mut self, addresses: Vec<String>) -> Self {
        self.address_check = addresses;
        self
    }
}

/// Which field an error of the form is about.
fn field_of(t: &'static Text, error: &str) -> Option<&'static str> {
    let h = &t.dashboard.handover;
    if [t.auth.email_invalid, h.recipient_invalid, h.too_many_recipients].contains(&error) {
        Some("recipient")
    } else if [t.dashboard.file_missing, t.dashboard.upload_unavailable, t.dashboard.upload_too_large, h.too_many_files]
        .contains(&error)
    {
        Some("file")
    } else if [t.dashboard.note.note_empty, t.dashboard.note.note_too_long, t.dashboard.note.note_with_files]
        .contains(&error)
    {
        Some("note")
    } else if error == t.dashboard.message_too_long {
        Some("message")
    } else if error == t.errors.bad_request.title {
        Some("expires_in")
    } else {
        None
    }
}

pub(super) fn form_page<'a>(
    state: &AppState,
    c: Chrome,
    csrf: &'a str,
    fields: &'a Fields,
    error: Option<&'static str>,
) -> NewSharePage<'a> {
    let lang = c.lang;
    let (max_ttl, max_bytes) = state.services.sharing.limits();
    let default_ttl = state.services.sharing.default_ttl();
    let h = &c.t.dashboard.handover;
    let recipients_hint = h.recipients_hint.replace("{max}", &MAX_RECIPIENTS.to_string());
    let files_hint =
        h.files_hint.replace("{files}", &MAX_FILES.to_string()).replace("{size}", &human_size(max_bytes, lang));
    let note_hint = c.t.dashboard.note.note_hint.replace("{limit}", &super::fields::note_limit());
    NewSharePage {
        expiry_options: expiry_options(&c, max_ttl, default_ttl, &fields.expires_in),
        error_field: error.and_then(|e| field_of(c.t, e)),
        c,
        csrf_token: csrf,
        max_size: human_size(max_bytes, lang),
        max_bytes,
        recipient: &fields.recipient,
        message: &fields.message,
        mail_lang: &fields.mail_lang,
        notify: fields.notify,
        name_file: fields.name_file,
        allow_reply: fields.allow_reply,
        error,
        uploaded: fields.uploaded.iter().map(|u| (u, human_size(u.size_bytes, lang))).collect(),
        error_said: None,
        address_check: Vec::new(),
        recipient_confirmed: &fields.recipient_confirmed,
        recipients_hint,
        files_hint,
        max_files: MAX_FILES,
        recipients_max_chars: MAX_RECIPIENTS * 256,
        sends_note: fields.sends_note,
        note: &fields.note,
        note_hint,
        note_max_bytes: NOTE_LIMIT,
    }
}
