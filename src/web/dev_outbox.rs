//! GET /dev/outbox: with no SMTP relay configured, an admin can read the mails watasu wrote to
//! DATA_DIR/dev-mail, codes included, and so try every step alone. The route is not even mounted
//! when WATASU_SMTP_URL is set.

use askama::Template;
use poem::{
    handler,
    web::{Data, Html},
};

use super::{Admin, AppError, AppState, Chrome, render};
use crate::mail::dev_outbox::OutboxMail;

/// Mails shown, newest first.
const SHOWN: usize = 30;

#[derive(Template)]
#[template(path = "admin/dev_outbox.html")]
struct DevOutboxPage {
    c: Chrome,
    mails: Vec<OutboxMail>,
}

#[handler]
pub async fn show(c: Chrome, state: Data<&AppState>, _admin: Admin) -> Result<Html<String>, AppError> {
    let mails = state.services.mails.dev_outbox(SHOWN).await?;
    render(&DevOutboxPage { c, mails })
}
