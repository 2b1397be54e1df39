//! GET /dev/outbox: with no SMTP relay configured, an admin can read the mails watasu wrote to
//! DATA_DIR/outbox, codes included, and so try every step alone. The route is not even mounted
//! when WATASU_SMTP_URL is set.

use askama::Template;
use poem::{
    handler,
    web::{Data, Html},
};

use super::{Admin, AppError, AppState, Chrome, render};
use crate::mail::dev_outbox::{OutboxMail, read_outbox};

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
    let dir = state.config.settings.data_dir.join("outbox");
    let mails = tokio::task::spawn_blocking(move || read_outbox(&dir, SHOWN))
        .await
        .map_err(|e| AppError::Internal(e.into()))?
        .unwrap_or_default();
    render(&DevOutboxPage { c, mails })
}
