//! Code mails leave in the background, so the answer to an address submission takes the same
//! time whether or not a mail is sent. A failed send is retried briefly, then logged and recorded
//! as an event the sender sees, never shown to the recipient (that would reveal the match).

use std::time::Duration;

use crate::{
    i18n::Lang,
    mail::{
        messages::{code_mail, receipt_mail},
        outbox::{MailKind, Outbox},
    },
    ratelimit::Limit,
    secret::SecretString,
    share::{EventKind, Share},
    web::AppState,
};

/// Quick retries for a code mail: the recipient is waiting for it.
const RETRY_DELAYS: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(3), Duration::from_secs(8)];

/// Code mails actually sent per share (email bombing): past this, a matched request still gets
/// the same answer, but no mail leaves; the sender's timeline shows it as a failed code mail.
const MAILS_PER_SHARE: [Limit; 2] =
    [Limit::new(5, Duration::from_secs(3600)), Limit::new(10, Duration::from_secs(24 * 3600))];

/// Mails a code to the share's registered address, in the background.
pub fn spawn_code_mail(state: &AppState, share: &Share, code: SecretString, lang: Lang) {
    let state = state.clone();
    let (share_id, to) = (share.id, share.recipient_email.clone());
    tokio::spawn(async move { send_code(&state, share_id, &to, code, lang).await });
}

/// Queues the sender's download receipt (if they asked for one) and tries to deliver it now.
pub fn spawn_download_receipt(state: &AppState, share_id: i64) {
    let state = state.clone();
    tokio::spawn(async move {
        let target = match state.shares.links.repo().receipt_target(share_id).await {
            Ok(Some(target)) => target,
            Ok(None) => return,
            Err(error) => return tracing::warn!(share_id, %error, "could not look up the download receipt"),
        };
        let lang = Lang::from_code(&target.sender_lang).unwrap_or_default();
        let from = &state.config.settings.mail_from;
        let message =
            match receipt_mail(from, &target.sender_email, lang, &target.recipient_email, &target.original_name) {
                Ok(message) => message,
                Err(error) => return tracing::warn!(share_id, %error, "could not build the download receipt"),
            };
        let outbox = Outbox::new(state.db.clone(), &state.secret_key);
        if let Err(error) =
            outbox.queue(Some(share_id), MailKind::DownloadReceipt, &message, state.mailer.clone()).await
        {
            tracing::warn!(share_id, %error, "could not queue the download receipt");
        }
    });
}

async fn send_code(state: &AppState, share_id: i64, to: &str, code: SecretString, lang: Lang) {
    let bucket = format!("{}mails", super::share_code_limits(share_id));
    match state.limiter.hit(&bucket, &MAILS_PER_SHARE).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            tracing::warn!(share_id, "code mail held back: too many code mails for this share");
            return state.events.record_quietly(share_id, EventKind::CodeMailFailed).await;
        }
        Err(error) => return tracing::warn!(share_id, %error, "could not count code mails"),
    }
    let message = match code_mail(&state.config.settings.mail_from, to, lang, code.expose()) {
        Ok(message) => message,
        Err(error) => {
            tracing::warn!(share_id, %error, "could not build the code mail");
            return;
        }
    };
    for (attempt, delay) in std::iter::once(Duration::ZERO).chain(RETRY_DELAYS).enumerate() {
        tokio::time::sleep(delay).await;
        match state.mailer.send(message.clone()).await {
            Ok(()) => {
                state.events.record_quietly(share_id, EventKind::CodeSent).await;
                return;
            }
            Err(error) => tracing::warn!(share_id, attempt, error = %format!("{error:#}"), "code mail not delivered"),
        }
    }
    state.events.record_quietly(share_id, EventKind::CodeMailFailed).await;
}
