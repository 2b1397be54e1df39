//! The API's handovers: create one (of finished uploads, of a multipart body's files, or a
//! note), page through one's shares, read a handover with each share's outcome and timeline and
//! its files' digests, and end, renew or unlock a share or end a whole handover. Every rule is the sharing service's, as for
//! the pages; a share of another sender's answers 404 as one that does not exist.

use poem::web::Data;
use poem_openapi::{
    ApiRequest, ApiResponse, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{
    ApiTags,
    auth::Token,
    cursor::Page,
    fields::{self, invalid},
    multipart,
    problem::ApiError,
    views::*,
};
use crate::{
    accounts::{EmailAddress, User, tokens::Scope},
    i18n::Lang,
    services::{
        mails::Delivery,
        sharing::{Change, FinishedUpload, Handover, Source, UploadFile, viewer},
    },
    share::{
        Message, ShareTtl,
        create::{self, CreateError},
        note::Note,
    },
    storage::StoreError,
    web::AppState,
};

pub struct HandoverApi;

/// A new handover's answer: 201 with each recipient's share.
#[derive(ApiResponse)]
pub enum Made {
    #[oai(status = 201)]
    Created(Json<CreatedHandover>),
}

/// What a change of a share or handover came to.
#[derive(Object)]
pub struct Changed {
    /// How many shares it ended (1 for a single share).
    pub ended: u32,
}

/// A fresh link, seen only here and in the recipient's mail.
#[derive(Object)]
pub struct Renewed {
    pub link: String,
}

type Answer<T> = Result<Json<T>, ApiError>;

#[OpenApi(tag = "ApiTags::Handovers")]
impl HandoverApi {
    /// Hands files or a note to one or more recipients, each getting their own share and link
    /// by mail.
    ///
    /// The files are either finished uploads of the token's owner (`upload_ids` of a JSON body)
    /// or, for small files, the `file` parts of a `multipart/form-data` body that come after its
    /// other fields; the files of one body together may hold the instance's upload limit, and a
    /// larger body is refused (413) with nothing kept.
    ///
    /// Needs the scope `shares:write`.
    #[oai(path = "/handovers", method = "post")]
    async fn create(&self, state: Data<&AppState>, token: Token, body: NewHandoverBody) -> Result<Made, ApiError> {
        let sender = token.with(Scope::SharesWrite)?;
        match body {
            NewHandoverBody::Json(Json(body)) => {
                let checked = check(&state, &sender.user, &body)?;
                let files = finished_uploads(&state, &sender.user, &body.upload_ids).await?;
                make(&state, &sender.user, &body, checked, &files).await
            }
            NewHandoverBody::Multipart(form) => multipart::hand_over(&state, &sender.user, form).await,
        }
    }

    /// The token owner's shares (one per recipient of each handover), newest first, a page at a
    /// time: pass `next_cursor` as `cursor` for the next.
    ///
    /// Needs the scope `shares:read`.
    #[oai(path = "/handovers", method = "get")]
    async fn list(
        &self,
        state: Data<&AppState>,
        token: Token,
        /// Where the previous page ended (its `next_cursor`).
        cursor: Query<Option<String>>,
        /// How many shares at most (1 to 100; 25 without it).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Answer<SharePage> {
        let caller = token.with(Scope::SharesRead)?;
        let page = Page::of(cursor.0.as_deref(), limit.0)?;
        let shares = state.services.sharing.list(viewer(&caller.user), None, page.before, page.ask()).await?;
        let (shares, next_cursor) = page.cut(shares, |share| share.id);
        Ok(Json(SharePage { shares: shares.into_iter().map(ShareItem::from).collect(), next_cursor }))
    }

    /// The handover share `id` belongs to: every share with its outcome and timeline, and the
    /// files with their SHA-256 digests.
    ///
    /// Needs the scope `shares:read`.
    #[oai(path = "/handovers/:id", method = "get")]
    async fn show(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Answer<HandoverDetail> {
        let caller = token.with(Scope::SharesRead)?;
        let sharing = &state.services.sharing;
        let handover = sharing.handover(viewer(&caller.user), id.0).await?.ok_or_else(ApiError::not_found)?;
        let mut shares = Vec::with_capacity(handover.shares.len());
        for share in handover.shares {
            let events = match sharing.timeline(viewer(&caller.user), share.id).await? {
                Some(timeline) => timeline.events.into_iter().map(Event::from).collect(),
                None => Vec::new(),
            };
            shares.push(ShareDetail { share: share.into(), events });
        }
        Ok(Json(HandoverDetail { shares, files: handover.files.into_iter().map(FileItem::from).collect() }))
    }

    /// Ends every share of the handover that can still be downloaded.
    ///
    /// Needs the scope `shares:write`.
    #[oai(path = "/handovers/:id/end", method = "post")]
    async fn end_handover(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Answer<Changed> {
        let caller = token.with(Scope::SharesWrite)?;
        match state.services.sharing.revoke_handover(viewer(&caller.user), id.0).await? {
            Change::Done(ended) => Ok(Json(Changed { ended: u32::try_from(ended).unwrap_or(u32::MAX) })),
            other => Err(unchanged(other, "no share of this handover can be ended any more")),
        }
    }

    /// Ends one share at once; its file is deleted.
    ///
    /// Needs the scope `shares:write`.
    #[oai(path = "/shares/:id/end", method = "post")]
    async fn end_share(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Answer<Changed> {
        let caller = token.with(Scope::SharesWrite)?;
        let actor = crate::services::sharing::Actor::Sender(viewer(&caller.user));
        match state.services.sharing.revoke(actor, id.0).await? {
            Change::Done(()) => Ok(Json(Changed { ended: 1 })),
            other => Err(unchanged(other, "the share has already ended")),
        }
    }

    /// Mails the recipient a fresh link; the old one stops working.
    ///
    /// Needs the scope `shares:write`.
    #[oai(path = "/shares/:id/renew", method = "post")]
    async fn renew(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Answer<Renewed> {
        let caller = token.with(Scope::SharesWrite)?;
        match state.services.sharing.renew_link(&caller.user, id.0).await? {
            Change::Done(link) => Ok(Json(Renewed { link })),
            other => Err(unchanged(other, "the share has ended; it takes no fresh link")),
        }
    }

    /// Accepts codes again on a share locked by too many wrong ones.
    ///
    /// Needs the scope `shares:write`.
    #[oai(path = "/shares/:id/unlock", method = "post")]
    async fn unlock(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Answer<Changed> {
        let caller = token.with(Scope::SharesWrite)?;
        match state.services.sharing.unlock(viewer(&caller.user), id.0).await? {
            Change::Done(()) => Ok(Json(Changed { ended: 0 })),
            other => Err(unchanged(other, "the share is not locked")),
        }
    }
}

/// A new handover as JSON, or as a multipart body carrying its files.
#[derive(ApiRequest)]
pub enum NewHandoverBody {
    Json(Json<NewHandover>),
    Multipart(multipart::HandoverForm),
}

/// A new handover's values, each read into its domain type.
pub(super) struct Checked {
    recipients: Vec<EmailAddress>,
    message: Message,
    note: Option<Note>,
    ttl: ShareTtl,
    lang: Lang,
}

/// `body`'s values, or the problem (422) naming the first refused one.
pub(super) fn check(state: &AppState, sender: &User, body: &NewHandover) -> Result<Checked, ApiError> {
    let sharing = &state.services.sharing;
    let recipients = body
        .recipients
        .iter()
        .map(|to| EmailAddress::parse(to).map_err(|e| invalid("recipients", format!("{to}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    create::recipient_count(recipients.len()).map_err(|e| invalid("recipients", e))?;
    let message = Message::parse(&body.message).map_err(|e| invalid("message", e))?;
    let note = body.note.as_deref().map(Note::parse).transpose().map_err(|e| invalid("note", e))?;
    let ttl = fields::ttl(body.ttl.as_deref(), sharing.default_ttl(), sharing.limits().0)?;
    let lang = fields::lang(body.lang.as_deref(), sender)?;
    Ok(Checked { recipients, message, note, ttl, lang })
}

/// The sender's finished uploads `ids`, or the problem (422) naming the first that is not one.
async fn finished_uploads(state: &AppState, sender: &User, ids: &[String]) -> Result<Vec<FinishedUpload>, ApiError> {
    let mut files = Vec::with_capacity(ids.len());
    for id in ids {
        let upload = state.services.sharing.finished_upload(sender, id).await?;
        let upload = upload
            .ok_or_else(|| ApiError::unprocessable(format!("upload_ids: {id} is not a finished upload of yours")))?;
        files.push(upload);
    }
    Ok(files)
}

/// Makes the handover of `files` (or of `body`'s note) through the sharing service.
pub(super) async fn make(
    state: &AppState,
    sender: &User,
    body: &NewHandover,
    checked: Checked,
    files: &[FinishedUpload],
) -> Result<Made, ApiError> {
    let handover = Handover {
        recipients: checked.recipients,
        files: files
            .iter()
            .map(|f| UploadFile {
                file_name: &f.file_name,
                content_type: &f.content_type,
                source: Source::Finished(&f.id),
            })
            .collect(),
        note: checked.note,
        ttl: checked.ttl,
        message: checked.message,
        lang: checked.lang,
        notify_on_download: body.notify_on_download,
        name_file_in_mail: body.name_file_in_mail,
        allow_reply: body.allow_reply,
    };
    let created = state.services.sharing.create(sender, handover, async || Ok(()), Delivery::Background).await;
    let shares = created
        .map_err(refused)?
        .into_iter()
        .map(|share| CreatedShare {
            id: share.share_id,
            recipient: share.recipient.as_str().to_owned(),
            link: share.link,
        })
        .collect();
    Ok(Made::Created(Json(CreatedHandover { shares })))
}

/// The problem of a change that did not happen.
fn unchanged<T>(change: Change<T>, not_applicable: &str) -> ApiError {
    match change {
        Change::NotVisible => ApiError::not_found(),
        Change::TooSoon(wait) => ApiError::too_many("too many fresh links lately", wait),
        Change::Done(_) | Change::NotApplicable => ApiError::conflict(not_applicable),
    }
}

/// A refused handover as its problem: the sender's values are 422 (a limit 413, a broken body
/// 400), the server's failures 5xx.
pub(super) fn refused(error: CreateError) -> ApiError {
    use poem::http::StatusCode;
    match error {
        CreateError::TooLarge { .. } => ApiError::of(StatusCode::PAYLOAD_TOO_LARGE, error.to_string()),
        CreateError::SenderDisabled => ApiError::of(StatusCode::FORBIDDEN, error.to_string()),
        CreateError::ServerStopping => ApiError::of(StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
        // The body's bytes ended or broke inside a file: the client's input, not the store.
        CreateError::Store(StoreError::Content(_)) => {
            ApiError::of(StatusCode::BAD_REQUEST, "a file part of the body was cut off or malformed")
        }
        CreateError::Store(store) => crate::services::Fault::of_store(store).into(),
        CreateError::Share(share) => crate::services::Fault::Internal(share.into()).into(),
        other => ApiError::unprocessable(other.to_string()),
    }
}
