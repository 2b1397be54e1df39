//! The one-time code's mail: sent in the background, retried briefly while the recipient waits,
//! and held back past the link's budget, each outcome an event the sender sees.

use std::time::Duration;

use super::Mails;
use crate::{
    i18n::Lang,
    mail::messages::code_mail,
    ratelimit::Limit,
    secret::SecretString,
    services::Fault,
    share::{EventKind, Share},
};

/// Quick retries for a code mail: the recipient is waiting for it.
const CODE_RETRY_DELAYS: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(3), Duration::from_secs(8)];

/// Code mails actually sent per share (email bombing): past this, a matched request still gets
/// the same answer, but no mail leaves; the sender's timeline shows it as a failed code mail.
const CODE_MAILS_PER_SHARE: [Limit; 2] =
    [Limit::new(5, Duration::from_secs(3600)), Limit::new(10, Duration::from_secs(24 * 3600))];

/// The bucket that counts a link's code mails, under the link's own limits.
fn code_mail_bucket(limits_prefix: &str) -> String {
    format!("{limits_prefix}mails")
}

impl Mails {
    /// Mails a code to the share's registered address, in the background.
    pub fn spawn_code_mail(&self, share: &Share, code: SecretString, lang: Lang, limits_prefix: String) {
        let mails = self.clone();
        let (share_id, to) = (share.id, share.recipient_email.clone());
        tokio::spawn(async move { mails.send_code(share_id, &to, code, lang, &limits_prefix).await });
    }

    async fn send_code(&self, share_id: i64, to: &str, code: SecretString, lang: Lang, limits_prefix: &str) {
        match self.limiter.hit(&code_mail_bucket(limits_prefix), &CODE_MAILS_PER_SHARE).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                tracing::warn!(share_id, "code mail held back: too many code mails for this share");
                self.metrics.code_mail("held_back");
                return self.events.record_quietly(share_id, EventKind::CodeMailFailed).await;
            }
            Err(error) => return tracing::warn!(share_id, %error, "could not count code mails"),
        }
        let message = match code_mail(&self.config.mail_origin(), to, lang, code.expose()) {
            Ok(message) => message,
            Err(error) => return tracing::warn!(share_id, %error, "could not build the code mail"),
        };
        // Each attempt ends within WATASU_SMTP_TIMEOUT (the mailer's deadline), so this loop, and
        // the task it runs in, always ends with one of the two events.
        for (attempt, delay) in std::iter::once(Duration::ZERO).chain(CODE_RETRY_DELAYS).enumerate() {
            tokio::time::sleep(delay).await;
            match self.mailer.send(message.clone()).await {
                Ok(()) => {
                    self.metrics.code_mail("sent");
                    return self.events.record_quietly(share_id, EventKind::CodeSent).await;
                }
                Err(error) => {
                    tracing::warn!(share_id, attempt, error = %format!("{error:#}"), "code mail not delivered")
                }
            }
        }
        tracing::error!(share_id, "code mail given up: the relay refused it or did not finish it in time");
        self.metrics.code_mail("failed");
        self.events.record_quietly(share_id, EventKind::CodeMailFailed).await;
    }

    /// How long until another code mail may leave under the link whose limits start with
    /// `limits_prefix` (zero: now). Anyone holding the link and the address can spend the budget,
    /// so the sender's page says when it is spent; a fresh link clears it.
    pub async fn code_mails_wait(&self, limits_prefix: &str) -> Result<Duration, Fault> {
        Ok(self.limiter.wait_for_room(&code_mail_bucket(limits_prefix), &CODE_MAILS_PER_SHARE).await?)
    }
}
