//! `watasu share create`: streams a file into storage, creates the share, queues the recipient's
//! notification in the mail outbox and tries to deliver it at once, and prints the share URL as the
//! last line of standard output.

use std::time::Duration;

use super::usage;
use crate::{
    accounts::{EmailAddress, Users},
    config::Config,
    i18n::{Lang, format::human_time},
    lifecycle::LocalFileStore,
    mail::{
        self, Mailer, messages,
        outbox::{MailKind, Outbox, Outcome},
    },
    open_database,
    share::{
        Message, ShareLinks, ShareRepository,
        create::{CreateError, ShareRequest, create_share},
    },
};

pub struct CreateShareArgs {
    pub from: String,
    pub to: String,
    pub file: std::path::PathBuf,
    pub expires_in: Option<Duration>,
    pub message: String,
    pub lang: Option<Lang>,
}

pub async fn create(config: &Config, args: CreateShareArgs) -> anyhow::Result<()> {
    let settings = &config.settings;
    let sender_email = EmailAddress::parse(&args.from).map_err(|e| usage(format!("--from: {e}")))?;
    let recipient = EmailAddress::parse(&args.to).map_err(|e| usage(format!("--to: {e}")))?;
    let message = Message::parse(&args.message).map_err(|e| usage(format!("--message: {e}")))?;
    let ttl = args.expires_in.unwrap_or(settings.share_ttl);
    if ttl > settings.share_ttl_max {
        return Err(usage(format!(
            "--expires-in is longer than the maximum of {}",
            crate::config::format_duration(settings.share_ttl_max)
        )));
    }
    let file =
        tokio::fs::File::open(&args.file).await.map_err(|e| usage(format!("--file {}: {e}", args.file.display())))?;
    if !file.metadata().await?.is_file() {
        return Err(usage(format!("--file {} is not a regular file", args.file.display())));
    }
    let file_name = args.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();

    let db = open_database(config).await?;
    let sender = Users::new(db.clone())
        .find_by_email(&sender_email)
        .await?
        .filter(|u| !u.disabled)
        .ok_or_else(|| usage(format!("--from: no active sender account for {}", sender_email.as_str())))?;
    let lang = args.lang.or_else(|| Lang::from_code(&sender.lang)).unwrap_or_default();
    let store = LocalFileStore::new(settings.data_dir.join("files"))?;
    let links = ShareLinks::new(ShareRepository::new(db.clone()));
    let request = ShareRequest {
        sender_id: sender.id,
        recipient: recipient.clone(),
        file_name: &file_name,
        content_type: "application/octet-stream",
        content: Box::pin(file),
        max_bytes: settings.max_upload_bytes,
        ttl,
        message,
        lang,
        notify_on_download: true,
    };
    let issued = create_share(&links, &store, request).await.map_err(|e| match e {
        CreateError::TooLarge { .. }
        | CreateError::TtlTooShort
        | CreateError::Refused(_)
        | CreateError::SenderDisabled => usage(e.to_string()),
        other => other.into(),
    })?;
    let link = config.url_for(&format!("/s/{}", issued.token.expose()));
    let share = links.resolve(issued.token.expose()).await?;

    let mailer = mail::from_settings(settings.smtp_url.as_ref().map(|s| s.expose()), &settings.data_dir)?;
    let notification = messages::Notification {
        sender_name: &sender.display_name,
        message: &share.message,
        link: &link,
        expires: &human_time(share.expires_at, lang),
    };
    let message = messages::notification_mail(&settings.mail_from, recipient.as_str(), lang, &notification)?;
    let outbox = Outbox::new(db.clone(), &crate::load_secret_key(config)?);
    notify(&outbox, mailer.as_ref(), issued.share_id, &message, recipient.as_str()).await;
    crate::outln!("share {} created", issued.share_id);
    crate::outln!("{link}");
    db.close().await;
    Ok(())
}

/// Queues the notification and tries one delivery now, so the recipient is mailed at once when the
/// relay works; otherwise `watasu serve` delivers it later. Never fails the command: the share
/// exists, and its URL is printed whatever happens here.
async fn notify(outbox: &Outbox, mailer: &dyn Mailer, share_id: i64, message: &lettre::Message, to: &str) {
    let id = match outbox.enqueue(Some(share_id), MailKind::ShareNotification, message).await {
        Ok(id) => id,
        Err(error) => {
            eprintln!("warning: the notification mail could not be queued ({error}); send the link yourself");
            return;
        }
    };
    match outbox.deliver_one(mailer, id).await {
        Ok(Some(Outcome::Sent)) => eprintln!("mailed the link to {to}"),
        Ok(Some(Outcome::Retrying { error_class })) => eprintln!(
            "the mail relay did not take the notification mail now ({error_class}); it is queued and \
             the watasu server (`watasu serve`) will deliver it"
        ),
        Ok(Some(Outcome::Dead { error_class })) => {
            eprintln!("warning: the notification mail could not be delivered ({error_class}); send the link yourself")
        }
        Ok(None) => eprintln!("the notification mail is queued; the watasu server is delivering it"),
        Err(error) => eprintln!(
            "the notification mail is queued but could not be sent now ({error}); the watasu server \
             (`watasu serve`) will deliver it"
        ),
    }
}

/// `watasu share list [--json]`: id, status, recipient and expiry of every share.
pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let db = open_database(config).await?;
    let shares = ShareRepository::new(db.clone()).list_all().await?;
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&shares)?);
    } else {
        crate::outln!("id\tstatus\trecipient\texpires_at");
        for share in &shares {
            let status = match (share.status.as_str(), share.revoked, share.expired) {
                ("active", true, _) => "revoked",
                ("active", false, true) => "expired",
                (status, _, _) => status,
            };
            let expires = share.expires_at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            crate::outln!("{}\t{status}\t{}\t{expires}", share.id, share.recipient_email);
        }
    }
    db.close().await;
    Ok(())
}

/// `watasu share revoke ID_OR_URL`: ends an active share at once.
pub async fn revoke(config: &Config, id_or_url: &str) -> anyhow::Result<()> {
    let db = open_database(config).await?;
    let repo = ShareRepository::new(db.clone());
    let id = match id_or_url.trim().parse::<i64>() {
        Ok(id) => id,
        Err(_) => {
            let token = id_or_url.trim().rsplit("/s/").next().unwrap_or("").split(['/', '?', '#']).next().unwrap_or("");
            if !crate::session::is_token_shaped(token) {
                return Err(usage("give a share id or a share URL"));
            }
            repo.id_by_token_hash(&crate::secret::sha256_hex(token))
                .await?
                .ok_or_else(|| usage("no share has this URL"))?
        }
    };
    let lifecycle = crate::lifecycle::LifecycleRepository::new(
        db.clone(),
        config.settings.delivery_grace,
        config.settings.purge_retry_base,
    );
    if lifecycle.revoke(id).await? {
        crate::share::ShareEvents::new(db.clone()).record(id, crate::share::EventKind::Revoked).await?;
        crate::outln!("share {id} revoked; its file is deleted by the next GC pass");
    } else {
        return Err(usage(format!("share {id} is not active (already downloaded, expired, revoked or unknown)")));
    }
    db.close().await;
    Ok(())
}
