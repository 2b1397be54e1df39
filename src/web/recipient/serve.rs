//! The GETs a claim's 303 leads to: `/s/{token}/file` (the one file, or the ZIP archive of
//! several) and `/s/{token}/files/{position}` (one file of several), for the claiming session
//! during the delivery grace, whole or one range; a share not claimed yet goes to its landing page
//! (a GET never claims). HEAD says the same and sends, and records, nothing.

use poem::{
    Body, Response, handler,
    http::{Method, header},
    web::Path,
};

use super::{file, file::Served, range, refusal, tally};
use crate::{
    i18n::format,
    lifecycle::Claimed,
    services::{
        delivery::{Delivery, Sent, archive_of},
        handover::{Asked, Fetch, Refusal},
    },
    web::{AppError, Context, paths, see_other},
};

/// GET and HEAD /s/{token}/file: everything the share hands over.
#[handler]
pub async fn claimed_file(context: Context<'_>, Path(token): Path<String>) -> Result<Response, AppError> {
    serve(context, &token, Asked::All).await
}

/// GET and HEAD /s/{token}/files/{position}: one file of the share's handover.
#[handler]
pub async fn claimed_one(
    context: Context<'_>,
    Path((token, position)): Path<(String, i32)>,
) -> Result<Response, AppError> {
    serve(context, &token, Asked::File(position)).await
}

async fn serve(
    Context { state, session, req, .. }: Context<'_>,
    token: &str,
    asked: Asked,
) -> Result<Response, AppError> {
    let claimed = match state.services.handover.fetch(token, session.current().as_ref()).await.map_err(refusal)? {
        Fetch::Claimed(claimed) => claimed,
        Fetch::NotClaimed => return Ok(see_other(&paths::link(token))),
    };
    let (what, served) = sent(&claimed, asked).map_err(refusal)?;
    let delivery = Delivery { claimed: claimed.into(), what };
    let header_of = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let part = range::choose(header_of(header::RANGE), header_of(header::IF_RANGE), &served.etag, served.size);
    let Some((start, len)) = part.span(served.size) else { return Ok(file::unsatisfiable(&served)) };
    let deliveries = &state.services.deliveries;
    let body = match &delivery.what {
        Sent::File(index) => {
            file::stream(deliveries.open(&delivery.claimed.files[*index], start, len).await.map_err(refusal)?)
        }
        Sent::Archive(layout) => {
            Body::from_bytes_stream(deliveries.archive(&delivery.claimed, layout, start, start + len))
        }
    };
    if req.method() == Method::HEAD {
        return Ok(file::file_response(&served, part, Body::empty()));
    }
    let body = tally::tallied(body, deliveries.clone(), delivery, start, len);
    Ok(file::file_response(&served, part, body))
}

/// What answers the request, and how its headers describe it: a handover of one file is always
/// that file; one of several is the archive of them all, or the file at the position asked for.
fn sent(claimed: &Claimed, asked: Asked) -> Result<(Sent, Served), Refusal> {
    let one = |index: usize| (Sent::File(index), Served::file(&claimed.files[index]));
    match asked {
        Asked::All if claimed.files.len() == 1 => Ok(one(0)),
        // A note's handover holds no file: its page is `/s/{token}/note`.
        Asked::All if claimed.files.is_empty() => Err(Refusal::NotAvailable("fetch of the files of a note")),
        Asked::Note => Err(Refusal::NotAvailable("a note asked for as a file")),
        Asked::All => {
            let layout = archive_of(claimed)?;
            let served = Served::archive(&layout, archive_name(claimed));
            Ok((Sent::Archive(layout.into()), served))
        }
        Asked::File(position) => claimed
            .files
            .iter()
            .position(|file| file.position == position)
            .map(one)
            .ok_or(Refusal::NotAvailable("fetch of a file the share does not have")),
    }
}

/// The archive's name: the day the handover was made, on the clock of the share's language
/// (`watasu-2026-12-05.zip`). ASCII only, so every browser and file system keeps it as it is; the
/// names inside carry the sender's words.
fn archive_name(claimed: &Claimed) -> String {
    let day = format::local_time(claimed.created_at, claimed.lang.into()).date_naive();
    format!("watasu-{}.zip", day.format("%Y-%m-%d"))
}
