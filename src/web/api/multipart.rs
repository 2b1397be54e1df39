//! A new handover in one `multipart/form-data` body, for small files: its fields first, named
//! as in the JSON body, then a `file` part per file. Each file is kept through the sharing
//! service as the new-share form keeps it, within what is left of the instance's upload limit,
//! while it arrives: a body over the limit is refused (413) once the limit is reached, and what
//! was kept of it is removed again, as after any other refusal.

use poem::{
    FromRequest, Request, RequestBody,
    http::StatusCode,
    web::{Field, Multipart},
};
use poem_openapi::{
    payload::{ParsePayload, Payload},
    registry::{MetaSchemaRef, Registry},
    types::multipart::Upload,
};

use super::{
    fields::invalid,
    handovers::{self, Made, refused},
    problem::ApiError,
    views::NewHandover,
};
use crate::{
    accounts::User,
    services::sharing::FinishedUpload,
    share::create::{CreateError, MAX_RECIPIENTS},
    web::{
        AppError, AppState,
        dashboard::form_body::{OVERSIZED_READ, discard_rest, keep_uploads, largest_form, read_text},
    },
};

/// The body as the document describes it. The operation reads it as [`HandoverForm`] instead,
/// field by field as it arrives, so a file is never held whole before it is kept.
#[derive(poem_openapi::Multipart)]
#[allow(dead_code)]
struct Described {
    /// A recipient's address; one field per recipient.
    recipients: Vec<String>,
    /// A message in the recipients' mail.
    message: Option<String>,
    /// How long the links stay valid (`7d`, `12h`, …); the server's default without it.
    ttl: Option<String>,
    /// The language of the recipients' mails and pages (`en`, `ja`); the owner's without it.
    lang: Option<String>,
    /// `true` (without it) or `false`: a mail to the sender once a recipient downloads.
    notify_on_download: Option<bool>,
    /// `true` (without it) or `false`: the recipients' mail names the files and their sizes.
    name_file_in_mail: Option<bool>,
    /// `true` or `false` (without it): the recipients may answer with files.
    allow_reply: Option<bool>,
    /// A file, named by its part's `filename`; one part per file, after every other field.
    file: Vec<Upload>,
}

/// A new handover's multipart body, not read yet.
pub struct HandoverForm(Multipart);

impl Payload for HandoverForm {
    const CONTENT_TYPE: &'static str = <Described as Payload>::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        <Described as Payload>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        <Described as Payload>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        <Described as Payload>::register(registry);
    }
}

impl ParsePayload for HandoverForm {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        Ok(Self(Multipart::from_request(request, body).await?))
    }
}

/// Reads `form`'s fields, keeps its files as the sender's finished uploads and makes the
/// handover of them; after a refusal nothing of the form is kept, and the rest of the body is
/// read (up to a bound) so the client sees the answer.
pub async fn hand_over(state: &AppState, sender: &User, form: HandoverForm) -> Result<Made, ApiError> {
    let mut multipart = form.0;
    let mut kept = Vec::new();
    let made = read_and_make(state, sender, &mut multipart, &mut kept).await;
    if made.is_err() {
        let ids: Vec<String> = kept.into_iter().map(|file| file.id).collect();
        state.services.sharing.discard_uploads(sender, &ids).await;
        discard_rest(&mut multipart, OVERSIZED_READ * largest_form(state)).await;
    }
    made
}

async fn read_and_make(
    state: &AppState,
    sender: &User,
    multipart: &mut Multipart,
    kept: &mut Vec<FinishedUpload>,
) -> Result<Made, ApiError> {
    let (body, first_file) = read_fields(multipart).await?;
    // The values are checked before a byte of a file is kept.
    let checked = handovers::check(state, sender, &body)?;
    if let Some(first) = first_file {
        let sharing = &state.services.sharing;
        keep_uploads(sharing, sender, kept, first, multipart).await?.map_err(refused)?;
    }
    handovers::make(state, sender, &body, checked, kept).await
}

/// The fields before the first file, as the JSON body would carry them; and that file's part.
async fn read_fields(multipart: &mut Multipart) -> Result<(NewHandover, Option<Field>), ApiError> {
    let mut body = NewHandover {
        recipients: Vec::new(),
        upload_ids: Vec::new(),
        note: None,
        ttl: None,
        message: String::new(),
        lang: None,
        notify_on_download: true,
        name_file_in_mail: true,
        allow_reply: false,
    };
    while let Some(field) = multipart.next_field().await.map_err(unreadable_body)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            return Ok((body, Some(field)));
        }
        let text = read_text(field).await.map_err(unreadable_field)?;
        match name.as_str() {
            // Each value is bounded, and so is their number: nothing grows with the body.
            "recipients" if body.recipients.len() < MAX_RECIPIENTS => body.recipients.push(text),
            "recipients" => return Err(invalid("recipients", CreateError::RecipientCount)),
            "message" => body.message = text,
            "ttl" => body.ttl = Some(text),
            "lang" => body.lang = Some(text),
            "notify_on_download" => body.notify_on_download = yes_or_no(&name, &text)?,
            "name_file_in_mail" => body.name_file_in_mail = yes_or_no(&name, &text)?,
            "allow_reply" => body.allow_reply = yes_or_no(&name, &text)?,
            // As the JSON body, a field the operation does not know is passed over.
            _ => {}
        }
    }
    Ok((body, None))
}

fn yes_or_no(name: &str, text: &str) -> Result<bool, ApiError> {
    text.parse().map_err(|_| invalid(name, format!("{text}: neither true nor false")))
}

fn unreadable_body(error: poem::error::ParseMultipartError) -> ApiError {
    ApiError::of(StatusCode::BAD_REQUEST, format!("the multipart body could not be read: {error}"))
}

fn unreadable_field(error: AppError) -> ApiError {
    match error {
        AppError::TooLarge => ApiError::of(StatusCode::PAYLOAD_TOO_LARGE, "a field is longer than a field may be"),
        _ => ApiError::of(StatusCode::BAD_REQUEST, "a field of the multipart body could not be read"),
    }
}
