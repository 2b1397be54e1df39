//! Sending mail: an SMTP relay through lettre, or .eml files in DATA_DIR/dev-mail when no relay is
//! configured (a newcomer can run and try everything without a mail server).

pub mod dev_outbox;
mod files_named;
pub mod lock_notice;
pub mod messages;
pub mod origin;
pub mod outbox;
pub mod request_mails;
pub mod scan_notice;

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor, address::Envelope};

/// The folder of DATA_DIR the mails go to as .eml files when no SMTP relay is set. Not "outbox":
/// that is the `mail_outbox` table, which every mail passes through first.
pub const DEV_MAIL_DIR: &str = "dev-mail";

/// Something that delivers a finished message. A trait because tests and the two transports
/// are real alternatives.
#[async_trait::async_trait]
pub trait Mailer: Send + Sync {
    async fn send(&self, message: Message) -> anyhow::Result<()>;

    /// Delivers an already formatted message to the envelope's addresses: the mail outbox stores
    /// messages as bytes and cannot rebuild a `Message` from them.
    async fn send_raw(&self, envelope: &Envelope, message: &[u8]) -> anyhow::Result<()>;
}

/// A send the relay did not finish within the deadline: given up, its connection closed, and
/// counted as failed like a refusal.
#[derive(Debug, thiserror::Error)]
#[error("the relay did not finish the mail within {0:?}")]
pub struct SendTimedOut(pub Duration);

/// Delivers through an SMTP relay, each mail within `deadline`: lettre's own timeout bounds the
/// connect only, so a relay that accepts and then says nothing would hold a send forever. The
/// transport keeps no pool (see Cargo.toml): a conversation cut by the deadline drops its socket
/// with it, instead of going back into a pool half-way through a command.
pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    deadline: Duration,
}

impl SmtpMailer {
    async fn within<T>(
        &self,
        send: impl Future<Output = Result<T, lettre::transport::smtp::Error>>,
    ) -> anyhow::Result<()> {
        match tokio::time::timeout(self.deadline, send).await {
            Ok(sent) => sent.map(drop).context("SMTP delivery failed"),
            Err(_) => Err(SendTimedOut(self.deadline)).context("SMTP delivery failed"),
        }
    }
}

#[async_trait::async_trait]
impl Mailer for SmtpMailer {
    async fn send(&self, message: Message) -> anyhow::Result<()> {
        self.within(self.transport.send(message)).await
    }

    async fn send_raw(&self, envelope: &Envelope, message: &[u8]) -> anyhow::Result<()> {
        self.within(self.transport.send_raw(envelope, message)).await
    }
}

/// Writes each message as an .eml file into the development mail folder.
pub struct FileMailer {
    transport: AsyncFileTransport<Tokio1Executor>,
    pub dir: PathBuf,
}

#[async_trait::async_trait]
impl Mailer for FileMailer {
    async fn send(&self, message: Message) -> anyhow::Result<()> {
        self.transport.send(message).await.map(drop).context("writing the mail to the development mail folder")
    }

    async fn send_raw(&self, envelope: &Envelope, message: &[u8]) -> anyhow::Result<()> {
        self.transport
            .send_raw(envelope, message)
            .await
            .map(drop)
            .context("writing the mail to the development mail folder")
    }
}

/// Refuses a relay URL that would send the SMTP password in clear. lettre reads `smtp://` without
/// `?tls=` as no TLS at all (AUTH goes out in clear even when the relay offers STARTTLS), and
/// `?tls=opportunistic` falls back to clear text when STARTTLS is stripped on the way. A relay on
/// this machine (loopback) is exempt: nothing is on the wire.
pub fn check_smtp_url(url: &str) -> Result<(), String> {
    let parsed =
        url::Url::parse(url).map_err(|_| "is not an SMTP URL like smtp://host:25 or smtps://user:pass@host")?;
    let has_password = parsed.password().is_some();
    let tls = parsed.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
    let encrypted = parsed.scheme() == "smtps" || tls.as_deref() == Some("required");
    if has_password && !encrypted && !crate::is_loopback_host(parsed.host_str().unwrap_or_default()) {
        return Err("would send the password unencrypted: use smtps://… (TLS, port 465) or add ?tls=required \
                    (STARTTLS, port 587)"
            .to_owned());
    }
    Ok(())
}

/// Builds the mailer the settings ask for; each mail to a relay gets `deadline` (WATASU_SMTP_TIMEOUT).
pub fn from_settings(
    smtp_url: Option<&str>,
    data_dir: &std::path::Path,
    deadline: Duration,
) -> anyhow::Result<Arc<dyn Mailer>> {
    match smtp_url {
        Some(url) => {
            let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                .map_err(|e| anyhow::anyhow!("WATASU_SMTP_URL is not a valid SMTP URL: {e}"))?
                // The connect alone; the whole conversation is bounded by `deadline`.
                .timeout(Some(deadline))
                .build();
            Ok(Arc::new(SmtpMailer { transport, deadline }))
        }
        None => {
            let dir = data_dir.join(DEV_MAIL_DIR);
            crate::private_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            Ok(Arc::new(FileMailer { transport: AsyncFileTransport::new(&dir), dir }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_smtp_url;

    #[test]
    fn a_password_goes_to_a_remote_relay_only_over_tls() {
        for refused in [
            "smtp://user:pass@smtp.example.com:587",
            "smtp://user:pass@smtp.example.com",
            "smtp://user:pass@smtp.example.com:587?tls=opportunistic",
            "smtp://user:pass@192.0.2.10:25",
            "smtp://user:pass@localhost.example.com:25",
        ] {
            assert!(check_smtp_url(refused).is_err(), "{refused} was accepted");
        }
        for accepted in [
            "smtps://user:pass@smtp.example.com",
            "smtp://user:pass@smtp.example.com:587?tls=required",
            "smtp://smtp.example.com:25",
            "smtp://user:pass@127.0.0.1:25",
            "smtp://user:pass@localhost:25",
            "smtp://user:pass@[::1]:25",
        ] {
            assert_eq!(check_smtp_url(accepted), Ok(()), "{accepted}");
        }
    }
}
