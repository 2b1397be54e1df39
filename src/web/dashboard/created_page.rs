//! The page a new handover leads to. POST /shares/new answers 303 to GET /shares/{id}/created
//! (the first share's), so a reload shows this page again instead of sending the files twice; the
//! links travel in a `link_cookie`, each recipient's shown beside them while it lives, and
//! afterwards the page says where the links are.

use askama::Template;
use poem::{
    Response, handler,
    web::{Data, Html, Path, cookie::CookieJar},
};

use super::{
    ShareRow,
    link_cookie::{self, ShownOn},
    not_visible, row,
};
use crate::{
    i18n::format::human_size,
    scan::ScanState,
    services::sharing::Created,
    share::sender::Viewer,
    web::{AppError, AppState, Chrome, SignedIn, paths, render},
};

/// The answer to a successful form: to the created page, with the links for it to show.
pub(super) fn lead_to_created(state: &AppState, jar: &CookieJar, made: &[Created]) -> Response {
    let links: Vec<(i64, &str)> = made.iter().map(|share| (share.share_id, share.link.as_str())).collect();
    let first = links.first().map_or(0, |(id, _)| *id);
    link_cookie::lead_to(state, jar, ShownOn::Created, &links, &paths::share_created(first))
}

/// A recipient of the new handover, with their link while the cookie carries it.
struct Recipient {
    share: ShareRow,
    link: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/created.html")]
struct CreatedPage {
    c: Chrome,
    share: ShareRow,
    /// The handover's files with their sizes, in order.
    files: Vec<(String, String)>,
    /// Every recipient, in the order typed (the first is `share`'s).
    recipients: Vec<Recipient>,
    /// A file waits for the virus scan: the mails leave, and the links open, once it is clean.
    held: bool,
}

impl CreatedPage {
    /// No link is shown any more: the cookie is gone.
    fn links_gone(&self) -> bool {
        self.recipients.iter().all(|recipient| recipient.link.is_none())
    }
}

/// GET /shares/{id}/created: only for the share's own sender (an admin sees the share page).
#[handler]
pub async fn created(
    c: Chrome,
    Path(id): Path<i64>,
    jar: &CookieJar,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let own = Viewer { user_id: user.id, is_admin: false };
    let handover = state.services.sharing.handover(own, id).await?.ok_or_else(not_visible)?;
    let links = link_cookie::links(&state, jar, ShownOn::Created, id);
    let share = handover.shares.iter().find(|share| share.id == id).cloned().ok_or_else(not_visible)?;
    let held = handover.files.iter().any(|file| file.scan_state == Some(ScanState::Pending));
    let files =
        handover.files.into_iter().map(|file| (file.original_name, human_size(file.size_bytes, c.lang))).collect();
    let recipients = handover
        .shares
        .into_iter()
        .map(|share| Recipient {
            link: links.iter().find(|(shown, _)| *shown == share.id).map(|(_, link)| link.clone()),
            share: row(&c, share),
        })
        .collect();
    render(&CreatedPage { share: row(&c, share), files, recipients, held, c })
}
