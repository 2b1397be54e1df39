//! Replies: when a share's sender allows it, its verified recipient answers with files. A reply
//! is a request the sender did not have to make: from the share's sender to the address the
//! session proved, with the instance's default limits and link lifetime, its message naming the
//! share it answers. The session already proved the mailbox, so it is granted the new request at
//! once; the link is mailed as well, for another device (which proves the mailbox again).

use super::{Created, FileRequest, RequestError, Requests};
use crate::{
    accounts::EmailAddress,
    i18n::Lang,
    request::{Answerable, RequestLimits},
    secret::sha256_hex,
    services::{Fault, handover::Refusal, mails::Delivery},
    session::Session,
    share::{EventKind, Message, Share, ShareStatus, ShareTtl},
};

/// What the recipient's pages offer about a reply.
#[derive(Debug)]
pub enum ReplyOffer {
    /// This session may not reply: no grant for this share (nor its claim, during the grace).
    NotGranted,
    /// The sender does not allow replies (or the link asks for files itself).
    NotAllowed,
    /// The button: the share, and what the reply needs of it.
    Open(Share, Answerable),
    /// The share has its reply: its link went to the recipient's mailbox.
    Sent,
}

/// What the reply button came to.
#[derive(Debug)]
pub enum Replied {
    /// The reply, granted to this session: its link's page is the upload step.
    Made(Created),
    /// The share had its reply already.
    Already,
}

impl Requests {
    /// Whether this session may reply to the share a link names: it holds the share's grant while
    /// the share is active, or claimed it and the delivery grace runs; and the sender allows it.
    pub async fn reply_offer(&self, token: &str, session: Option<&Session>) -> Result<ReplyOffer, Refusal> {
        let Some(session) = session else { return Ok(ReplyOffer::NotGranted) };
        let share = match self.access.open(token).await {
            Ok(share) => share,
            Err(_) => return Ok(ReplyOffer::NotGranted),
        };
        let granted = match share.status {
            ShareStatus::Active => self.access.grants.is_granted(session, share.id).await?,
            _ => self.lifecycle.claimed(&sha256_hex(token), session).await?.is_some(),
        };
        if !granted {
            return Ok(ReplyOffer::NotGranted);
        }
        let Some(answerable) = self.repo.answerable(share.id).await?.filter(|a| a.allow_reply) else {
            return Ok(ReplyOffer::NotAllowed);
        };
        if self.repo.reply_of(share.id).await?.is_some() {
            return Ok(ReplyOffer::Sent);
        }
        Ok(ReplyOffer::Open(share, answerable))
    }

    /// The request that replies to share `share_id`, for the share's page (which checked the
    /// viewer may see the share).
    pub async fn reply_of(&self, share_id: i64) -> Result<Option<i64>, Fault> {
        Ok(self.repo.reply_of(share_id).await?)
    }

    /// "Reply with a file": makes the reply (once per share), mails its link to the recipient,
    /// and grants it to this session, which proved the mailbox for the share it answers.
    pub async fn reply(&self, token: &str, session: Option<&Session>) -> Result<Replied, Refusal> {
        let (share, answerable) = match self.reply_offer(token, session).await? {
            ReplyOffer::Open(share, answerable) => (share, answerable),
            ReplyOffer::NotGranted => return Err(Refusal::VerifyFirst),
            ReplyOffer::NotAllowed => return Err(Refusal::NotAvailable("a reply to a share that allows none")),
            ReplyOffer::Sent => return Ok(Replied::Already),
        };
        let Some(session) = session else { return Err(Refusal::VerifyFirst) };
        let Some(sender) = self.users.find_active(answerable.sender_id).await? else {
            return Err(Refusal::NotAvailable("a reply to a disabled sender"));
        };
        let request = self.reply_request(&share, &answerable).map_err(Fault::Internal)?;
        let made = match self.issue(&sender, request, Delivery::Background, Some(share.id)).await {
            Ok(made) => made,
            Err(RequestError::SenderDisabled) => return Err(Refusal::NotAvailable("a reply to a disabled sender")),
            Err(RequestError::Fault(fault)) => return Err(fault.into()),
        };
        let Some(created) = made else { return Ok(Replied::Already) };
        self.access.grants.grant(session.id, created.share_id).await?;
        self.events.record_quietly(created.share_id, EventKind::Verified).await;
        tracing::info!(share_id = share.id, reply_id = created.share_id, "a recipient replied with a request");
        Ok(Replied::Made(created))
    }

    /// The reply's request: to the share's recipient, in the share's language, with the
    /// instance's defaults.
    fn reply_request(&self, share: &Share, answerable: &Answerable) -> anyhow::Result<FileRequest> {
        let settings = &self.config.settings;
        let lang: Lang = share.lang;
        let rq = &lang.text().request;
        let what = answerable.first_file.as_deref().unwrap_or(rq.reply_what_note);
        let words = rq.reply_message.replace("{id}", &share.id.to_string()).replace("{what}", what);
        let words: String = words.chars().take(crate::share::MESSAGE_LIMIT).collect();
        Ok(FileRequest {
            uploader: EmailAddress::parse(&share.recipient_email).map_err(anyhow::Error::msg)?,
            message: Message::parse(&words)?,
            ttl: ShareTtl::parse(settings.share_ttl, settings.share_ttl_max)?,
            limits: RequestLimits::parse(None, None, None, settings.max_upload_bytes)?,
            lang,
        })
    }
}
