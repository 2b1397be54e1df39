//! What arrived on a file request, answered to its sender as bytes: one file (whole or a range)
//! or every released file as one streamed ZIP archive. The request's page and the API answer with
//! these same responses; each words a refusal its own way.

use poem::{
    Body, Response,
    http::{HeaderMap, header},
};

use super::{
    AppState,
    recipient::{file, range},
};
use crate::{
    accounts::User,
    lifecycle::Claimed,
    services::{delivery::archive_of, handover::Refusal, sharing::viewer},
};

/// Why nothing is served.
pub enum Unserved {
    /// Nothing of the request can be fetched by this viewer: not theirs, not answered, every file
    /// gone or held by the virus scan, or no file at that position.
    Missing,
    /// The store could not give the bytes (gone by now, damaged, or failing).
    Refused(Refusal),
}

impl From<crate::services::Fault> for Unserved {
    fn from(fault: crate::services::Fault) -> Self {
        Self::Refused(Refusal::Fault(fault))
    }
}

/// File `position` of request `id`, whole or the range `headers` ask for.
pub async fn one_file(
    state: &AppState,
    user: &User,
    id: i64,
    position: i32,
    headers: &HeaderMap,
) -> Result<Response, Unserved> {
    let claimed = answered(state, user, id).await?;
    let file = claimed.files.iter().find(|f| f.position == position).ok_or(Unserved::Missing)?;
    let served = file::Served::file(file);
    let part = part_of(headers, &served);
    let Some((start, len)) = part.span(served.size) else { return Ok(file::unsatisfiable(&served)) };
    let opened = state.services.deliveries.open(file, start, len).await.map_err(Unserved::Refused)?;
    Ok(file::file_response(&served, part, file::stream(opened)))
}

/// Every released file of request `id` as one ZIP archive, whole or the range `headers` ask for.
pub async fn archive(state: &AppState, user: &User, id: i64, headers: &HeaderMap) -> Result<Response, Unserved> {
    let claimed = answered(state, user, id).await?;
    let layout = archive_of(&claimed).map_err(Unserved::Refused)?;
    let day = claimed.created_at.0.format("%Y-%m-%d");
    let served = file::Served::archive(&layout, format!("watasu-request-{day}.zip"));
    let part = part_of(headers, &served);
    let Some((start, len)) = part.span(served.size) else { return Ok(file::unsatisfiable(&served)) };
    let bytes = state.services.deliveries.archive(&claimed, &layout, start, start + len);
    Ok(file::file_response(&served, part, Body::from_bytes_stream(bytes)))
}

/// The answered request's files the viewer may fetch now.
async fn answered(state: &AppState, user: &User, id: i64) -> Result<Claimed, Unserved> {
    state.services.requests.answered(viewer(user), id).await?.ok_or(Unserved::Missing)
}

/// The part of `served` the request's `Range` (and `If-Range`) ask for.
fn part_of(headers: &HeaderMap, served: &file::Served) -> range::Part {
    let header_of = |name| headers.get(name).and_then(|v: &poem::http::HeaderValue| v.to_str().ok());
    range::choose(header_of(header::RANGE), header_of(header::IF_RANGE), &served.etag, served.size)
}
