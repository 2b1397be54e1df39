//! `watasu share create`: streams the files into storage (or seals a secret note), creates a share per recipient, queues each
//! recipient's notification in the mail outbox and tries to deliver it at once, and prints the share
//! URLs, one per recipient, as the last lines of standard output.

use std::time::Duration;

use super::usage;
use crate::{
    accounts::EmailAddress,
    config::Config,
    i18n::Lang,
    mail::outbox::Outcome,
    services::{
        Services,
        mails::{Delivery, Notice},
        sharing::{Actor, Change, Handover, Source, UploadFile},
    },
    share::{Message, ShareStatus, ShareTtl, TtlError, create::CreateError, note::Note},
};

pub struct CreateShareArgs {
    pub from: String,
    pub to: Vec<String>,
    pub files: Vec<std::path::PathBuf>,
    /// A secret note handed over instead of files.
    pub note: Option<String>,
    pub expires_in: Option<Duration>,
    pub message: String,
    pub lang: Option<Lang>,
    /// The recipients may reply with files.
    pub allow_reply: bool,
}

pub async fn create(config: &Config, args: CreateShareArgs) -> anyhow::Result<()> {
    let settings = &config.settings;
    let sender_email = EmailAddress::parse(&args.from).map_err(|e| usage(format!("--from: {e}")))?;
    let mut recipients = Vec::with_capacity(args.to.len());
    for to in &args.to {
        let recipient = EmailAddress::parse(to).map_err(|e| usage(format!("--to {to}: {e}")))?;
        if recipient.looks_mistyped() {
            eprintln!("warning: --to {}: the part after the @ looks mistyped; sending anyway", recipient.as_str());
        }
        recipients.push(recipient);
    }
    let message = Message::parse(&args.message).map_err(|e| usage(format!("--message: {e}")))?;
    let note = args.note.as_deref().map(Note::parse).transpose().map_err(|e| usage(format!("--note: {e}")))?;
    let ttl = ShareTtl::parse(args.expires_in.unwrap_or(settings.share_ttl), settings.share_ttl_max)
        .map_err(|e| usage(if e == TtlError::TooShort { e.to_string() } else { format!("--expires-in {e}") }))?;
    let mut opened = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let file = tokio::fs::File::open(path).await.map_err(|e| usage(format!("--file {}: {e}", path.display())))?;
        if !file.metadata().await?.is_file() {
            return Err(usage(format!("--file {} is not a regular file", path.display())));
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        opened.push((name, file));
    }

    let services = Services::open(config).await?;
    let sender = services
        .accounts
        .active_by_email(&sender_email)
        .await?
        .ok_or_else(|| usage(format!("--from: no active sender account for {}", sender_email.as_str())))?;
    let files = opened
        .iter_mut()
        .map(|(name, file)| UploadFile {
            file_name: name,
            content_type: "application/octet-stream",
            source: Source::Stream(Box::pin(file)),
        })
        .collect();
    let handover = Handover {
        recipients,
        files,
        note,
        ttl,
        message,
        lang: args.lang.unwrap_or(sender.lang),
        notify_on_download: true,
        name_file_in_mail: true,
        allow_reply: args.allow_reply,
    };
    let created =
        services.sharing.create(&sender, handover, async || Ok(()), Delivery::Now).await.map_err(|e| match e {
            CreateError::TooLarge { .. }
            | CreateError::TtlTooShort
            | CreateError::FileCount
            | CreateError::NoteWithFiles
            | CreateError::RecipientCount
            | CreateError::Refused(_)
            | CreateError::UploadUnavailable
            | CreateError::SenderDisabled => usage(e.to_string()),
            other => other.into(),
        })?;
    for share in &created {
        report_notice(&share.notice, share.recipient.as_str());
        crate::outln!("share {} created for {}", share.share_id, share.recipient.as_str());
    }
    // The links last: a script takes them from the end of the output.
    for share in &created {
        crate::outln!("{}", share.link);
    }
    services.close().await;
    Ok(())
}

/// Says what became of the notification. Never fails the command: the share exists, and its URL
/// is printed whatever happened here.
pub(super) fn report_notice(notice: &Notice, to: &str) {
    match notice {
        Notice::NotQueued(error) => {
            eprintln!("warning: the notification mail could not be queued ({error}); send the link yourself")
        }
        Notice::Tried(Some(Outcome::Sent)) => eprintln!("mailed the link to {to}"),
        Notice::Tried(Some(Outcome::Retrying { error_class })) => eprintln!(
            "the mail relay did not take the notification mail now ({error_class}); it is queued and \
             the watasu server (`watasu serve`) will deliver it"
        ),
        Notice::Tried(Some(Outcome::Dead { error_class })) => {
            eprintln!("warning: the notification mail could not be delivered ({error_class}); send the link yourself")
        }
        Notice::Tried(Some(Outcome::Dropped)) => {
            eprintln!("the share ended before its notification mail was sent, so it was not sent")
        }
        Notice::Tried(None) | Notice::Queued => {
            eprintln!("the notification mail is queued; the watasu server is delivering it")
        }
        Notice::NotTried(error) => eprintln!(
            "the notification mail is queued but could not be sent now ({error}); the watasu server \
             (`watasu serve`) will deliver it"
        ),
    }
}

/// `watasu share list [--json]`: id, handover, status, recipient and expiry of every share.
pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let shares = services.sharing.list_all().await?;
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&shares)?);
    } else {
        crate::outln!("id\thandover\tstatus\trecipient\texpires_at");
        for share in &shares {
            let status = match (share.status, share.revoked, share.expired) {
                (ShareStatus::Active, true, _) => "revoked",
                (ShareStatus::Active, false, true) => "expired",
                (status, _, _) => status.code(),
            };
            let expires = share.expires_at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            crate::outln!("{}\t{}\t{status}\t{}\t{expires}", share.id, share.handover_id, share.recipient_email);
        }
    }
    services.close().await;
    Ok(())
}

/// `watasu share revoke ID_OR_URL`: ends an active share at once.
pub async fn revoke(config: &Config, id_or_url: &str) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let id = match id_or_url.trim().parse::<i64>() {
        Ok(id) => id,
        Err(_) => {
            let token = id_or_url.trim().rsplit("/s/").next().unwrap_or("").split(['/', '?', '#']).next().unwrap_or("");
            if !crate::session::is_token_shaped(token) {
                return Err(usage("give a share id or a share URL"));
            }
            services.sharing.id_for_link(token).await?.ok_or_else(|| usage("no share has this URL"))?
        }
    };
    if services.sharing.revoke(Actor::Operator, id).await? != Change::Done(()) {
        return Err(usage(format!("share {id} is not active (already downloaded, expired, revoked or unknown)")));
    }
    crate::outln!("share {id} revoked; its file is deleted by the next GC pass");
    services.close().await;
    Ok(())
}
