//! The new-share form's fields as they arrive, and their check into domain values.

use std::time::Duration;

use crate::{
    accounts::EmailAddress,
    i18n::Text,
    services::sharing::FinishedUpload,
    share::{Message, ShareTtl, TtlError},
};

/// The text fields of the form.
#[derive(Default)]
pub(super) struct Fields {
    pub(super) csrf_token: Option<String>,
    pub(super) recipient: String,
    pub(super) expires_in: String,
    pub(super) message: String,
    pub(super) mail_lang: String,
    pub(super) notify: bool,
    /// The notification mail names the file and its size (on unless unticked).
    pub(super) name_file: bool,
    /// The finished upload named in the `upload` field, once looked up.
    pub(super) uploaded: Option<FinishedUpload>,
    /// The recipient the sender said is right when asked about a likely typo in it.
    pub(super) recipient_confirmed: String,
}

impl Fields {
    /// The recipient, when it looks mistyped and the sender has not said yet that it is right.
    pub(super) fn address_to_check(&self) -> Option<EmailAddress> {
        let address = EmailAddress::parse(&self.recipient).ok()?;
        (address.looks_mistyped() && address.as_str() != self.recipient_confirmed.trim()).then_some(address)
    }
}

/// The form's fields as domain values.
pub(super) struct Parsed {
    pub(super) recipient: EmailAddress,
    pub(super) message: Message,
    pub(super) ttl: ShareTtl,
}

/// What is wrong with the fields: a message the form shows again, or a validity under a minute
/// (which the form never offers), answered with a plain 400.
pub(super) enum Invalid {
    Form(&'static str),
    TtlTooShort,
}

/// Checks the fields in the order the form reports them: recipient, file, message, validity.
pub(super) fn parse_fields(
    t: &'static Text,
    fields: &Fields,
    file_name: &str,
    max_ttl: Duration,
) -> Result<Parsed, Invalid> {
    let recipient = EmailAddress::parse(&fields.recipient).map_err(|_| Invalid::Form(t.auth.email_invalid))?;
    if file_name.is_empty() {
        return Err(Invalid::Form(t.dashboard.file_missing));
    }
    let message = Message::parse(&fields.message).map_err(|_| Invalid::Form(t.dashboard.message_too_long))?;
    let ttl =
        crate::config::parse_duration(&fields.expires_in).map_err(|_| Invalid::Form(t.errors.bad_request.title))?;
    let ttl = ShareTtl::parse(ttl, max_ttl).map_err(|error| match error {
        TtlError::TooShort => Invalid::TtlTooShort,
        TtlError::TooLong(_) => Invalid::Form(t.errors.bad_request.title),
    })?;
    Ok(Parsed { recipient, message, ttl })
}
