//! "Reply with a file": the recipient of a share whose sender allows it answers with files (a
//! request made for them, see [`crate::services::requests`]). The button is on the download step
//! and, for the claiming browser during the grace, on the "already downloaded" page.

use poem::{
    Response, handler,
    web::{Data, Path},
};

use super::super::{AppError, AppState, middleware::SessionHandle, paths, see_other};
use crate::{
    services::requests::{Replied, ReplyOffer},
    session::Session,
};

/// What a recipient's page shows about a reply: the button, or that the reply was made.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplyShown {
    pub offered: bool,
    pub sent: bool,
}

/// What this session is offered on the share a link names.
pub(super) async fn shown(state: &AppState, token: &str, session: Option<&Session>) -> Result<ReplyShown, AppError> {
    let offer = state.services.requests.reply_offer(token, session).await.map_err(super::refusal)?;
    Ok(ReplyShown { offered: matches!(offer, ReplyOffer::Open(..)), sent: matches!(offer, ReplyOffer::Sent) })
}

/// POST /s/{token}/reply: makes the reply and sends the browser to its link, where this session
/// is at the upload step already; a share with its reply already sends it back to the share's
/// page, which says so (the reply's link, a secret, is only in the mail).
#[handler]
pub async fn reply(
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    let replied = state.services.requests.reply(&token, session.current().as_ref()).await.map_err(super::refusal)?;
    Ok(match replied {
        Replied::Made(created) => see_other(&created.path),
        Replied::Already => see_other(&paths::link(&token)),
    })
}
