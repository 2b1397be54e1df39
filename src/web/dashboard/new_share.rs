//! The new-share page and its upload. The upload streams straight to storage (never held in
//! memory) with the size cap enforced while copying; over the cap answers 413 and leaves nothing
//! on disk. The CSRF token must be the first multipart field, and every other field comes before
//! the file, so a bad form is refused before a byte of the file is stored.

use std::io::ErrorKind;

use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Html, Multipart, cookie::CookieJar},
};
use tokio::io::AsyncReadExt;

use super::super::{
    AppError, AppState, Chrome, Context, SignedIn, middleware::SessionHandle, paths, render, render_with, see_other,
};
pub(super) use super::fields::Fields;
use super::fields::{Invalid, parse_fields};
pub(super) use super::form_page::form_page;
use crate::{
    accounts::{EmailAddress, User},
    i18n::{Lang, Text, format::human_size},
    services::{
        mails::Delivery,
        sharing::{Created, Handover, Sharing, Source, UploadFile},
    },
    session::csrf_tokens_match,
    share::create::CreateError,
    storage::StoreError,
};

/// Longest accepted text field of the form.
const TEXT_FIELD_LIMIT: u64 = 8 * 1024;
/// Room for the form fields and multipart framing around the file.
const FORM_OVERHEAD: u64 = 64 * 1024;
/// How many times the largest form is read from a form over the limit before its form comes
/// back: reading costs time, not storage, and a browser answered before it has sent its whole
/// body shows "connection reset" instead of the answer.
const OVERSIZED_READ: u64 = 2;

/// GET /shares/new
#[handler]
pub async fn new_share_form(
    Context { c, state, session, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let expires_in = crate::config::format_duration(state.services.sharing.default_ttl());
    let mail_lang = state.services.accounts.share_mail_lang(&user, c.lang).await?.code().to_owned();
    let fields = Fields { expires_in, mail_lang, notify: true, name_file: true, ..Default::default() };
    render(&form_page(state, c, &session.form_token(), &fields, None))
}

async fn read_text(field: poem::web::Field) -> Result<String, AppError> {
    let mut text = String::new();
    field
        .into_async_read()
        .take(TEXT_FIELD_LIMIT + 1)
        .read_to_string(&mut text)
        .await
        .map_err(|_| AppError::BadRequest("unreadable form field"))?;
    if text.len() as u64 > TEXT_FIELD_LIMIT {
        return Err(AppError::TooLarge);
    }
    Ok(text)
}

/// What a submitted form came to.
pub(super) enum Submitted {
    /// The share exists: the answer leads to its created page.
    Created { share_id: i64, link: String },
    /// The form again, or another page, as it is.
    Page(Response),
}

impl From<Response> for Submitted {
    fn from(page: Response) -> Self {
        Submitted::Page(page)
    }
}

/// POST /shares/new (multipart/form-data)
#[handler]
pub async fn upload(
    Context { c, state, session, req, .. }: Context<'_>,
    multipart: Multipart,
    jar: &CookieJar,
    // Taken as a result so that a form whose session ended is read before it is answered.
    user: poem::Result<SignedIn>,
) -> poem::Result<Response> {
    let user = match user {
        Ok(SignedIn(user)) => user,
        Err(error) if matches!(error.downcast_ref::<AppError>(), Some(AppError::SignInRequired)) => {
            return Ok(session_ended(state, multipart).await);
        }
        Err(error) => return Err(error),
    };
    match read_form(req, c, multipart, state, session, &user).await? {
        Submitted::Created { share_id, link } => Ok(super::created_page::lead_to_created(state, jar, share_id, &link)),
        Submitted::Page(page) => Ok(page),
    }
}

/// The answer to a form whose session ended: the sign-in page, saying to choose the file again.
/// A browser that gets an answer before it has sent the whole body shows "connection reset"
/// instead, so the body is read first, up to the largest form accepted, and thrown away.
async fn session_ended(state: &AppState, mut multipart: Multipart) -> Response {
    discard_rest(&mut multipart, largest_form(state)).await;
    see_other(paths::LOGIN_UPLOAD_LOST)
}

/// Reads and throws away the form's remaining fields, up to `left` bytes in all.
async fn discard_rest(multipart: &mut Multipart, mut left: u64) {
    while left > 0
        && let Ok(Some(field)) = multipart.next_field().await
    {
        left -= discard(field.into_async_read(), left).await;
    }
}

/// The largest body the form may have: the file at its limit and the fields around it.
fn largest_form(state: &AppState) -> u64 {
    state.services.sharing.limits().1 + FORM_OVERHEAD
}

/// Reads and throws away up to `left` bytes of `reader` (stopping at an error); returns how many.
async fn discard(reader: impl tokio::io::AsyncRead + Unpin, left: u64) -> u64 {
    tokio::io::copy(&mut reader.take(left), &mut tokio::io::sink()).await.unwrap_or(left)
}

async fn read_form(
    req: &Request,
    c: Chrome,
    mut multipart: Multipart,
    state: &AppState,
    session: &SessionHandle,
    user: &User,
) -> Result<Submitted, AppError> {
    let current = session.current().ok_or(AppError::Forbidden("no session"))?;
    let (_, max_bytes) = state.services.sharing.limits();
    let declared: Option<u64> = req.header("content-length").and_then(|v| v.parse().ok());
    // Over the largest form by its length: refused at the file, after the fields it comes back with.
    let declared_over = declared.filter(|length| *length > max_bytes + FORM_OVERHEAD);
    let t = c.t;
    let sending = Sending { state, user, c, csrf: &current.csrf_secret, declared };
    let mut fields = Fields::default();
    while let Some(field) =
        multipart.next_field().await.map_err(|_| AppError::BadRequest("malformed multipart body"))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        if fields.csrf_token.is_none() && name != "csrf_token" {
            return Err(AppError::Forbidden("the CSRF token must come first"));
        }
        match name.as_str() {
            "csrf_token" => {
                let token = read_text(field).await?;
                if !csrf_tokens_match(&current.csrf_secret, &token) {
                    return Err(AppError::Forbidden("missing or wrong CSRF token"));
                }
                fields.csrf_token = Some(token);
            }
            "recipient" => fields.recipient = read_text(field).await?,
            "recipient_confirmed" => fields.recipient_confirmed = read_text(field).await?,
            "expires_in" => fields.expires_in = read_text(field).await?,
            "message" => fields.message = read_text(field).await?,
            "mail_lang" => fields.mail_lang = read_text(field).await?,
            "notify" => fields.notify = read_text(field).await? == "1",
            "name_file" => fields.name_file = read_text(field).await? == "1",
            // No file chosen: a kept upload may follow (the JS-off form after a refusal).
            "file" if field.file_name().unwrap_or_default().is_empty() => {}
            "file" => match declared_over {
                None => return store_file(sending, fields, field, &mut multipart).await,
                Some(length) => {
                    let left = OVERSIZED_READ * largest_form(state);
                    discard_rest(&mut multipart, left - discard(field.into_async_read(), left).await).await;
                    return sending.form_too_large(&fields, FileSize::About(length));
                }
            },
            "upload" => {
                let id = read_text(field).await?;
                return super::from_upload::share(sending, fields, id.trim(), &mut multipart).await;
            }
            _ => return Err(AppError::BadRequest("unknown form field")),
        }
    }
    sending.form_again(&fields, StatusCode::BAD_REQUEST, t.dashboard.file_missing)
}

/// Who sends the new-share form, and what showing it again needs.
pub(super) struct Sending<'a> {
    state: &'a AppState,
    user: &'a User,
    c: Chrome,
    csrf: &'a str,
    /// The request's Content-Length: the size a file over the limit is said to be.
    declared: Option<u64>,
}

/// The new share's file: streamed in the form, or a finished upload the form names.
pub(super) struct NewFile<'a> {
    pub(super) name: &'a str,
    pub(super) content_type: &'a str,
    pub(super) source: Source<'a>,
}

impl Sending<'_> {
    pub(super) fn user(&self) -> &User {
        self.user
    }

    pub(super) fn sharing(&self) -> &Sharing {
        &self.state.services.sharing
    }

    pub(super) fn text(&self) -> &'static Text {
        self.c.t
    }

    /// The form again with `error` at its field, answered with `status`.
    pub(super) fn form_again(
        self,
        fields: &Fields,
        status: StatusCode,
        error: &'static str,
    ) -> Result<Submitted, AppError> {
        Ok(render_with(status, &form_page(self.state, self.c, self.csrf, fields, Some(error)))?.into())
    }

    /// The form again with the file over the limit: the limit and how large the file is.
    fn form_too_large(self, fields: &Fields, size: FileSize) -> Result<Submitted, AppError> {
        let (t, lang, limit) = (self.c.t, self.c.lang, self.state.services.sharing.limits().1);
        let (words, bytes) = match size {
            FileSize::About(bytes) => (t.dashboard.form_checks.too_large, bytes),
            FileSize::AtLeast(bytes) => (t.dashboard.form_checks.too_large_at_least, bytes),
        };
        let said = words.replace("{size}", &human_size(bytes, lang)).replace("{limit}", &human_size(limit, lang));
        let page = form_page(self.state, self.c, self.csrf, fields, Some(t.dashboard.upload_too_large)).saying(said);
        Ok(render_with(StatusCode::PAYLOAD_TOO_LARGE, &page)?.into())
    }

    /// The form again, asking whether `address` is right before anything is created. A file
    /// streamed in the form is kept as a finished upload, so the answer needs no second upload
    /// (and a browser answered before it has sent the whole body would show "connection reset").
    async fn ask_about_address(
        self,
        mut fields: Fields,
        address: &EmailAddress,
        file: NewFile<'_>,
        rest_of_form: impl AsyncFnOnce() -> Result<(), CreateError>,
    ) -> Result<Submitted, AppError> {
        if let Source::Stream(stream) = file.source {
            let sharing = &self.state.services.sharing;
            fields.uploaded = sharing.keep_upload(self.user, stream, file.name, file.content_type).await?;
            let _ = rest_of_form().await;
        }
        let page = form_page(self.state, self.c, self.csrf, &fields, None).asking_about(address.as_str());
        Ok(render_with(StatusCode::OK, &page)?.into())
    }

    /// Checks the fields and makes the share from `file`, once `before_issue` agrees; a refused
    /// form comes back with what is wrong (a kept upload that is gone no longer shown).
    pub(super) async fn submit(
        self,
        mut fields: Fields,
        file: NewFile<'_>,
        before_issue: impl AsyncFnOnce() -> Result<(), CreateError>,
    ) -> Result<Submitted, AppError> {
        let (t, sharing, user) = (self.c.t, &self.state.services.sharing, self.user);
        let parsed = match parse_fields(t, &fields, file.name, sharing.limits().0) {
            Ok(parsed) => parsed,
            Err(Invalid::Form(error)) => return self.form_again(&fields, StatusCode::BAD_REQUEST, error),
            Err(Invalid::TtlTooShort) => return Err(AppError::BadRequest("ttl too short")),
        };
        if let Some(address) = fields.address_to_check() {
            return self.ask_about_address(fields, &address, file, before_issue).await;
        }
        let lang = Lang::from_code(&fields.mail_lang).unwrap_or(user.lang);
        let handover = Handover {
            recipients: vec![parsed.recipient],
            files: vec![UploadFile { file_name: file.name, content_type: file.content_type, source: file.source }],
            note: None,
            ttl: parsed.ttl,
            message: parsed.message,
            lang,
            notify_on_download: fields.notify,
            name_file_in_mail: fields.name_file,
        };
        let declared = self.declared;
        match sharing.create(user, handover, before_issue, Delivery::Background).await {
            Ok(created) => {
                self.state.services.accounts.remember_share_mail_lang(user, lang).await?;
                let Created { share_id, link, .. } = created.into_iter().next().expect("one recipient, one share");
                Ok(Submitted::Created { share_id, link })
            }
            // Used by a first submission of the same form, or gone meanwhile.
            Err(CreateError::UploadUnavailable) => {
                fields.uploaded = None;
                self.form_again(&fields, StatusCode::BAD_REQUEST, t.dashboard.upload_unavailable)
            }
            Err(CreateError::SenderDisabled) => {
                tracing::info!(account_id = user.id, "upload refused: the sender was disabled while it arrived");
                self.form_again(&fields, StatusCode::FORBIDDEN, t.dashboard.upload_sender_disabled)
            }
            // Cut off at the limit: the whole request's length, or as far as it was read.
            Err(CreateError::TooLarge { limit }) => {
                self.form_too_large(&fields, declared.map_or(FileSize::AtLeast(limit + 1), FileSize::About))
            }
            Err(error) => Err(create_error(error)),
        }
    }
}

/// How large a file over the limit is known to be.
enum FileSize {
    /// The request's length, which is the file's and a little more.
    About(u64),
    /// The request was cut off at the limit: at least this.
    AtLeast(u64),
}

async fn store_file(
    sending: Sending<'_>,
    fields: Fields,
    field: poem::web::Field,
    multipart: &mut Multipart,
) -> Result<Submitted, AppError> {
    let file_name = field.file_name().unwrap_or_default().to_owned();
    let content_type = field.content_type().unwrap_or("application/octet-stream").to_owned();
    let source = Source::Stream(Box::pin(field.into_async_read()));
    // The file is the last field: anything after it (a second file…) refuses the whole form, but
    // for a kept upload's id, which the chosen file replaces (the upload expires unused).
    let nothing_after = async || match multipart.next_field().await {
        Ok(None) => Ok(()),
        Ok(Some(field)) if field.name() == Some("upload") => match multipart.next_field().await {
            Ok(None) => Ok(()),
            _ => Err(CreateError::Refused("a field after the upload")),
        },
        Ok(Some(_)) => Err(CreateError::Refused("a field after the file")),
        Err(_) => Err(CreateError::Refused("malformed multipart body after the file")),
    };
    let file = NewFile { name: &file_name, content_type: &content_type, source };
    sending.submit(fields, file, nothing_after).await
}

/// The error page for a share that could not be created (a disabled sender gets the form again).
pub(super) fn create_error(error: CreateError) -> AppError {
    match error {
        CreateError::TooLarge { .. } => AppError::TooLarge,
        CreateError::TtlTooShort => AppError::BadRequest("ttl too short"),
        CreateError::FileCount | CreateError::NoteWithFiles => AppError::BadRequest("too many files"),
        CreateError::RecipientCount => AppError::BadRequest("too many recipients"),
        CreateError::Refused(reason) => AppError::BadRequest(reason),
        CreateError::Store(StoreError::Content(_)) => AppError::BadRequest("upload cut off or malformed"),
        CreateError::Store(StoreError::Io(error))
            if matches!(error.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded) =>
        {
            AppError::StorageFull(error)
        }
        CreateError::Store(StoreError::Io(error)) => AppError::StorageUnavailable(StoreError::Io(error)),
        CreateError::Store(error) => AppError::Internal(error.into()),
        CreateError::UploadUnavailable => AppError::BadRequest("upload unavailable"),
        CreateError::ServerStopping => AppError::Restarting,
        CreateError::SenderDisabled | CreateError::Share(_) => AppError::Internal(error.into()),
    }
}
