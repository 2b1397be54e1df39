//! Delivering stored mails: one attempt per claimed row, failures classified without addresses or
//! server text, and the worker that runs passes on a timer and takes back rows a crash left behind.

use std::{sync::Arc, time::Duration};

use super::{BATCH, ClaimedMail, DeliveryReport, MAX_PASSES_PER_TICK, Outbox, Outcome};
use crate::mail::Mailer;

impl Outbox {
    /// One delivery pass over up to `limit` due rows, each claimed just before it is sent. A
    /// failure that says the relay itself is unavailable (no connection, timeout, 421) ends the
    /// pass: the rows not yet claimed stay pending with no attempt counted.
    pub async fn deliver_due(&self, mailer: &dyn Mailer, limit: u32) -> Result<DeliveryReport, sqlx::Error> {
        let mut report = DeliveryReport::default();
        for id in self.due_ids(limit).await? {
            if self.abandon.is_cancelled() {
                break;
            }
            if self.drop_if_share_closed(id).await? {
                tracing::info!(mail_id = id, "share notification dropped: the share was closed before it was sent");
                report.count(&Outcome::Dropped);
                continue;
            }
            let Some(mail) = self.claim(id).await? else { continue };
            let (outcome, relay_down) = self.send(mailer, &mail).await?;
            report.count(&outcome);
            if relay_down {
                break;
            }
        }
        Ok(report)
    }

    /// Stores a mail and starts one delivery attempt in the background, so it leaves at once when
    /// the relay works; otherwise the worker retries it. What the web pages use.
    pub async fn queue(
        &self,
        share_id: Option<i64>,
        kind: super::MailKind,
        message: &lettre::Message,
        mailer: Arc<dyn Mailer>,
    ) -> Result<i64, super::EnqueueError> {
        let id = self.enqueue(share_id, kind, message).await?;
        let outbox = self.clone();
        tokio::spawn(async move {
            if let Err(error) = outbox.deliver_one(mailer.as_ref(), id).await {
                tracing::warn!(share_id, kind = kind.code(), %error, "mail not delivered yet; the outbox retries");
            }
        });
        Ok(id)
    }

    /// Tries to deliver one row now (as `watasu share create` does right after enqueueing);
    /// `None` when the row is not due or another worker has it.
    pub async fn deliver_one(&self, mailer: &dyn Mailer, id: i64) -> Result<Option<Outcome>, sqlx::Error> {
        if self.drop_if_share_closed(id).await? {
            return Ok(Some(Outcome::Dropped));
        }
        match self.claim(id).await? {
            Some(mail) => Ok(Some(self.send(mailer, &mail).await?.0)),
            None => Ok(None),
        }
    }

    /// Sends a claimed row, records the result and counts it in the metrics.
    async fn send(&self, mailer: &dyn Mailer, mail: &ClaimedMail) -> Result<(Outcome, bool), sqlx::Error> {
        let sent = self.attempt(mailer, mail).await?;
        self.metrics.mail_delivery(sent.0.label());
        Ok(sent)
    }

    /// Sends a claimed row and records the result. A database error after the relay accepted the
    /// message leaves the row in 'sending'; `recover_stuck` then sends it again (a duplicate, not
    /// a loss).
    async fn attempt(&self, mailer: &dyn Mailer, mail: &ClaimedMail) -> Result<(Outcome, bool), sqlx::Error> {
        let Ok(message) = self.key.open(&mail.recipient, &mail.message) else {
            // The secret key changed since the mail was queued: it can never be sent.
            return self.record_failure(mail, Failure { class: "unreadable".to_owned(), relay_down: false }).await;
        };
        let Ok(envelope) = mail.envelope() else {
            return self.record_failure(mail, Failure { class: "bad envelope".to_owned(), relay_down: false }).await;
        };
        let sent = tokio::select! {
            sent = mailer.send_raw(&envelope, &message) => sent,
            () = self.abandon.cancelled() => return self.give_back(mail).await,
        };
        match sent {
            Ok(()) => {
                if !self.mark_sent(mail.id).await? {
                    tracing::warn!(mail_id = mail.id, "a mail was delivered twice (its row was already sent)");
                }
                Ok((Outcome::Sent, false))
            }
            Err(error) => {
                tracing::debug!(mail_id = mail.id, error = %format!("{error:#}"), "outbox mail not delivered");
                self.record_failure(mail, classify(&error)).await
            }
        }
    }

    /// The shutdown grace ended while the relay had not answered: the row is due again, for the
    /// next start (had the relay taken it after all, the recipient gets it twice, not never).
    async fn give_back(&self, mail: &ClaimedMail) -> Result<(Outcome, bool), sqlx::Error> {
        self.release(mail.id).await?;
        tracing::warn!(
            mail_id = mail.id,
            "the relay had not answered by the end of the shutdown grace; the mail stays queued"
        );
        Ok((Outcome::Retrying { error_class: "shutdown".to_owned() }, true))
    }

    async fn record_failure(&self, mail: &ClaimedMail, failure: Failure) -> Result<(Outcome, bool), sqlx::Error> {
        let status = self.mark_failed(mail, &failure.class).await?;
        let attempt = mail.attempts + 1;
        let error_class = failure.class;
        let outcome = if status.as_deref() == Some("dead") {
            tracing::error!(mail_id = mail.id, attempt, error_class, "outbox mail given up");
            Outcome::Dead { error_class }
        } else {
            tracing::warn!(mail_id = mail.id, attempt, error_class, "outbox mail not delivered; will retry");
            Outcome::Retrying { error_class }
        };
        Ok((outcome, failure.relay_down))
    }
}

/// Why a delivery failed, in words safe to store: no addresses, no server text.
struct Failure {
    class: String,
    /// The relay as a whole is unavailable, not just this message refused.
    relay_down: bool,
}

fn classify(error: &anyhow::Error) -> Failure {
    use lettre::transport::{file, smtp};
    for cause in error.chain() {
        if cause.downcast_ref::<crate::mail::SendTimedOut>().is_some() {
            return Failure { class: "timeout".to_owned(), relay_down: true };
        }
        if let Some(smtp) = cause.downcast_ref::<smtp::Error>() {
            if let Some(code) = smtp.status() {
                let code = code.to_string();
                // 421: "service not available, closing transmission channel".
                return Failure { relay_down: code == "421", class: format!("smtp {code}") };
            }
            let class = if smtp.is_timeout() {
                "timeout"
            } else if smtp.is_tls() {
                "tls"
            } else if smtp.is_response() {
                "smtp bad response"
            } else {
                "connection"
            };
            return Failure { class: class.to_owned(), relay_down: true };
        }
        if cause.downcast_ref::<file::Error>().is_some() {
            return Failure { class: "file".to_owned(), relay_down: true };
        }
    }
    Failure { class: "other".to_owned(), relay_down: true }
}

/// Delivers due mails every `interval` (and once at start) until `shutdown` resolves. Also takes
/// back rows a crashed worker left in 'sending'. A pass under way when `shutdown` resolves may
/// finish within `grace`; then a send still waiting for the relay is given up and its mail stays
/// queued, so a hung relay cannot hold up the process's exit for longer than the grace.
pub async fn run_outbox_worker(
    outbox: Outbox,
    mailer: Arc<dyn Mailer>,
    interval: Duration,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let stopping = tokio_util::sync::CancellationToken::new();
    let deadline = async {
        shutdown.await;
        stopping.cancel();
        tokio::time::sleep(grace).await;
        outbox.abandon.cancel();
        std::future::pending::<()>().await
    };
    let work = async {
        while !stopping.is_cancelled() {
            tick(&outbox, mailer.as_ref()).await;
            tokio::select! {
                () = stopping.cancelled() => {}
                () = tokio::time::sleep(interval) => {}
            }
        }
    };
    // `deadline` never ends, so this returns once `work` has seen the stop (and given back its row).
    tokio::select! {
        () = work => {}
        () = deadline => {}
    }
}

async fn tick(outbox: &Outbox, mailer: &dyn Mailer) {
    match outbox.recover_stuck().await {
        Ok(0) => {}
        Ok(rows) => tracing::warn!(rows, "took back outbox mails abandoned mid-send"),
        Err(error) => tracing::warn!(%error, "outbox recovery failed"),
    }
    for _ in 0..MAX_PASSES_PER_TICK {
        if outbox.abandon.is_cancelled() {
            break;
        }
        match outbox.deliver_due(mailer, BATCH).await {
            Ok(report) => {
                if report.attempted() > 0 {
                    tracing::info!(?report, "outbox delivery pass");
                }
                if report.attempted() < BATCH {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "outbox delivery pass failed");
                break;
            }
        }
    }
}
