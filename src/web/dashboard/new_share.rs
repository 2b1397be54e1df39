//! The new-share page and its upload. The CSRF token must be the first multipart field; the text
//! fields and the finished uploads the form names (`upload`, repeated) come next and the files
//! last, so a bad form is refused before a byte of a file is stored. Each file streams straight
//! to storage (never held in memory) against what the others leave of the limit, and is kept as a
//! finished upload; the handover is then made of them all. Over the limit answers 413 and leaves
//! nothing of the form's files.

use std::io::ErrorKind;

use poem::{
    Request, Response, handler,
    http::StatusCode,
    web::{Html, Multipart, cookie::CookieJar},
};

use super::super::{
    AppError, AppState, Chrome, Context, SignedIn, middleware::SessionHandle, paths, render, render_with, see_other,
};
pub(super) use super::fields::Fields;
use super::fields::{Invalid, parse_fields, too_many_files};
use super::form_body::{
    FORM_OVERHEAD, OVERSIZED_READ, discard, discard_rest, keep_files, largest_form, read_note, read_text,
};
pub(super) use super::form_page::form_page;
use crate::{
    accounts::{EmailAddress, User},
    i18n::{Lang, format::human_size},
    services::{
        mails::Delivery,
        sharing::{Created, Handover, Source, UploadFile},
    },
    session::csrf_tokens_match,
    share::{
        create::{CreateError, MAX_FILES},
        names::clean_file_name,
    },
    storage::StoreError,
};

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

/// What a submitted form came to.
pub(super) enum Submitted {
    /// The handover exists: the answer leads to its created page, with each recipient's link.
    Created(Vec<Created>),
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
        Submitted::Created(created) => Ok(super::created_page::lead_to_created(state, jar, &created)),
        Submitted::Page(page) => Ok(page),
    }
}

/// The answer to a form whose session ended: the sign-in page, saying to choose the files again.
/// A browser that gets an answer before it has sent the whole body shows "connection reset"
/// instead, so the body is read first, up to the largest form accepted, and thrown away.
async fn session_ended(state: &AppState, mut multipart: Multipart) -> Response {
    discard_rest(&mut multipart, largest_form(state)).await;
    see_other(paths::LOGIN_UPLOAD_LOST)
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
    // Over the largest form by its length: refused at the files, after the fields it comes back with.
    let declared_over = declared.filter(|length| *length > max_bytes + FORM_OVERHEAD);
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
            "allow_reply" => fields.allow_reply = read_text(field).await? == "1",
            "kind" => fields.sends_note = read_text(field).await? == "note",
            "note" => fields.note = read_note(field).await?,
            // A finished upload: the script's, or one a form shown again kept (and left ticked).
            "upload" if fields.upload_ids.len() <= MAX_FILES => {
                fields.upload_ids.push(read_text(field).await?.trim().to_owned());
            }
            "upload" => return Err(AppError::BadRequest("too many uploads named")),
            // No file chosen: the uploads named may be the form's files.
            "file" if field.file_name().unwrap_or_default().is_empty() => {}
            "file" => match declared_over {
                None => return sending.with_files(fields, field, &mut multipart).await,
                Some(length) => {
                    let left = OVERSIZED_READ * largest_form(state);
                    discard_rest(&mut multipart, left - discard(field.into_async_read(), left).await).await;
                    sending.look_up_uploads(&mut fields).await?;
                    return sending.form_too_large(&fields, FileSize::About(length));
                }
            },
            _ => return Err(AppError::BadRequest("unknown form field")),
        }
    }
    sending.submit(fields).await
}

/// Who sends the new-share form, and what showing it again needs.
pub(super) struct Sending<'a> {
    state: &'a AppState,
    user: &'a User,
    c: Chrome,
    csrf: &'a str,
    /// The request's Content-Length: the size files over the limit are said to be.
    declared: Option<u64>,
}

impl Sending<'_> {
    /// The form again with `error` at its field, answered with `status`.
    fn form_again(self, fields: &Fields, status: StatusCode, error: &'static str) -> Result<Submitted, AppError> {
        Ok(render_with(status, &form_page(self.state, self.c, self.csrf, fields, Some(error)))?.into())
    }

    /// The form again with what is wrong with its fields.
    fn refuse(self, fields: &Fields, invalid: Invalid) -> Result<Submitted, AppError> {
        match invalid {
            Invalid::Form(error) => self.form_again(fields, StatusCode::BAD_REQUEST, error),
            Invalid::Said(error, said) => {
                let page = form_page(self.state, self.c, self.csrf, fields, Some(error)).saying(said);
                Ok(render_with(StatusCode::BAD_REQUEST, &page)?.into())
            }
            Invalid::TtlTooShort => Err(AppError::BadRequest("ttl too short")),
        }
    }

    /// The form again with the files over the limit: the limit and how large they are.
    fn form_too_large(self, fields: &Fields, size: FileSize) -> Result<Submitted, AppError> {
        let (t, lang, limit) = (self.c.t, self.c.lang, self.state.services.sharing.limits().1);
        let (words, bytes) = match size {
            FileSize::About(bytes) => (t.dashboard.form_checks.too_large, bytes),
            FileSize::AtLeast(bytes) => (t.dashboard.form_checks.too_large_at_least, bytes),
            FileSize::Together(bytes) => (t.dashboard.handover.files_too_large, bytes),
        };
        let said = words.replace("{size}", &human_size(bytes, lang)).replace("{limit}", &human_size(limit, lang));
        let page = form_page(self.state, self.c, self.csrf, fields, Some(t.dashboard.upload_too_large)).saying(said);
        Ok(render_with(StatusCode::PAYLOAD_TOO_LARGE, &page)?.into())
    }

    /// Looks up the uploads the form names into `fields.uploaded`; false when one of them is not
    /// (or no longer) the sender's to share, which is then left out.
    pub(super) async fn look_up_uploads(&self, fields: &mut Fields) -> Result<bool, AppError> {
        let mut all = true;
        for id in &fields.upload_ids {
            match self.state.services.sharing.finished_upload(self.user, id).await? {
                Some(file) if !fields.uploaded.iter().any(|kept| kept.id == file.id) => fields.uploaded.push(file),
                Some(_) => {}
                None => all = false,
            }
        }
        Ok(all)
    }

    /// A form without files in its body: the handover is made of the uploads it names.
    async fn submit(self, mut fields: Fields) -> Result<Submitted, AppError> {
        if !self.look_up_uploads(&mut fields).await? {
            let unavailable = self.c.t.dashboard.upload_unavailable;
            return self.form_again(&fields, StatusCode::BAD_REQUEST, unavailable);
        }
        self.make(fields, Vec::new()).await
    }

    /// A form whose files follow, `first` the first of them: the fields are checked before a
    /// byte is stored, then each file is kept against what the others leave of the limit.
    async fn with_files(
        self,
        mut fields: Fields,
        first: poem::web::Field,
        multipart: &mut Multipart,
    ) -> Result<Submitted, AppError> {
        let t = self.c.t;
        if !self.look_up_uploads(&mut fields).await? {
            return self.form_again(&fields, StatusCode::BAD_REQUEST, t.dashboard.upload_unavailable);
        }
        let max_ttl = self.state.services.sharing.limits().0;
        if let Err(invalid) = parse_fields(t, &fields, fields.uploaded.len() + 1, max_ttl) {
            // Read to its end, so the browser shows the form again (a note beside files among them).
            let left = OVERSIZED_READ * largest_form(self.state);
            discard_rest(multipart, left - discard(first.into_async_read(), left).await).await;
            return self.refuse(&fields, invalid);
        }
        let named = fields.uploaded.len();
        match keep_files(&self.state.services.sharing, self.user, &mut fields, first, multipart).await? {
            Ok(kept) => self.make(fields, kept).await,
            Err(refused) => {
                let kept: Vec<String> = fields.uploaded.drain(named..).map(|file| file.id).collect();
                self.state.services.sharing.discard_uploads(self.user, &kept).await;
                discard_rest(multipart, OVERSIZED_READ * largest_form(self.state)).await;
                match refused {
                    CreateError::FileCount => self.refuse(&fields, too_many_files(t, MAX_FILES + 1)),
                    CreateError::TooLarge { limit } if named > 0 || !kept.is_empty() => {
                        let together = self.declared.unwrap_or(limit + 1);
                        self.form_too_large(&fields, FileSize::Together(together))
                    }
                    error => self.refused(fields, error),
                }
            }
        }
    }

    /// The form again, asking whether `addresses` are right before anything is created; the
    /// form's files are kept as uploads, so the answer needs no second file.
    fn ask_about_addresses(self, fields: &Fields, addresses: &[EmailAddress]) -> Result<Submitted, AppError> {
        let addresses = addresses.iter().map(|address| address.as_str().to_owned()).collect();
        let page = form_page(self.state, self.c, self.csrf, fields, None).asking_about(addresses);
        Ok(render_with(StatusCode::OK, &page)?.into())
    }

    /// Checks the fields and makes the handover of `fields.uploaded` (of which `kept` arrived in
    /// this form); a refused form comes back with what is wrong, and without this form's files
    /// when the refusal keeps nothing.
    async fn make(self, mut fields: Fields, kept: Vec<String>) -> Result<Submitted, AppError> {
        let (t, sharing, user) = (self.c.t, &self.state.services.sharing, self.user);
        let parsed = match parse_fields(t, &fields, fields.uploaded.len(), sharing.limits().0) {
            Ok(parsed) => parsed,
            Err(invalid) => return self.refuse(&fields, invalid),
        };
        let asked = fields.addresses_to_check();
        if !asked.is_empty() {
            return self.ask_about_addresses(&fields, &asked);
        }
        let lang = Lang::from_code(&fields.mail_lang).unwrap_or(user.lang);
        let names: Vec<String> = fields.uploaded.iter().map(|file| clean_file_name(&file.file_name)).collect();
        let files = fields
            .uploaded
            .iter()
            .zip(&names)
            .map(|(file, name)| UploadFile {
                file_name: name,
                content_type: if file.content_type.is_empty() {
                    "application/octet-stream"
                } else {
                    &file.content_type
                },
                source: Source::Finished(&file.id),
            })
            .collect();
        let handover = Handover {
            recipients: parsed.recipients,
            files,
            note: parsed.note,
            ttl: parsed.ttl,
            message: parsed.message,
            lang,
            notify_on_download: fields.notify,
            name_file_in_mail: fields.name_file,
            allow_reply: fields.allow_reply,
        };
        let outcome = sharing.create(user, handover, async || Ok(()), Delivery::Background).await;
        match outcome {
            Ok(created) => {
                self.state.services.accounts.remember_share_mail_lang(user, lang).await?;
                Ok(Submitted::Created(created))
            }
            Err(CreateError::TooLarge { .. }) => {
                let together = fields.uploaded.iter().map(|file| file.size_bytes).sum();
                sharing.discard_uploads(user, &kept).await;
                fields.uploaded.retain(|file| !kept.contains(&file.id));
                self.form_too_large(&fields, FileSize::Together(together))
            }
            Err(error) => {
                if !matches!(error, CreateError::UploadUnavailable) {
                    // Nothing of this form's files is kept after a refusal.
                    sharing.discard_uploads(user, &kept).await;
                    fields.uploaded.retain(|file| !kept.contains(&file.id));
                }
                self.refused(fields, error)
            }
        }
    }

    /// The answer to a handover `create` refused.
    fn refused(self, mut fields: Fields, error: CreateError) -> Result<Submitted, AppError> {
        let t = self.c.t;
        match error {
            // Used by a first submission of the same form, or gone meanwhile.
            CreateError::UploadUnavailable => {
                fields.uploaded.clear();
                self.form_again(&fields, StatusCode::BAD_REQUEST, t.dashboard.upload_unavailable)
            }
            CreateError::SenderDisabled => {
                tracing::info!(account_id = self.user.id, "file refused: the sender was disabled while it arrived");
                self.form_again(&fields, StatusCode::FORBIDDEN, t.dashboard.upload_sender_disabled)
            }
            // Cut off at the limit: the whole request's length, or as far as it was read.
            CreateError::TooLarge { limit } => {
                let size = self.declared.map_or(FileSize::AtLeast(limit + 1), FileSize::About);
                self.form_too_large(&fields, size)
            }
            error => Err(create_error(error)),
        }
    }
}

/// How large files over the limit are known to be.
enum FileSize {
    /// The request's length, which is the file's and a little more.
    About(u64),
    /// The request was cut off at the limit: at least this.
    AtLeast(u64),
    /// Several files, together about this large.
    Together(u64),
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
