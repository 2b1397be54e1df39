//! The mails use cases send: the recipient's notification (with a fresh link), the one-time code,
//! and the sender's download receipt and lock notice. Each is built and queued here only.
//!
//! Code mails leave in the background, so the answer to an address submission takes the same
//! time whether or not a mail is sent. A failed send is retried briefly, then logged and recorded
//! as an event the sender sees, never shown to the recipient (that would reveal the match).

mod code;

use std::{sync::Arc, time::Duration};

use super::{Fault, Parts};
use crate::{
    accounts::{TimeZone, User, second_factor::tries},
    config::Config,
    i18n::{
        Lang,
        format::{Reader, human_size, human_time},
    },
    mail::{
        Mailer,
        dev_outbox::{OutboxMail, read_outbox},
        lock_notice::{LockNotice, lock_notice_mail},
        messages::{
            FILES_LISTED, Notification, Receipt, invitation_mail, notification_mail, receipt_mail, wrong_codes_mail,
        },
        outbox::{MailKind, Outbox, Outcome},
        request_mails::{Arrived, RequestMail, arrived_mail, request_mail},
        scan_notice::{ScanNotice, scan_notice_mail},
    },
    ratelimit::{Limit, RateLimiter},
    scan::ScanFiles,
    share::{Share, ShareEvents, ShareRepository},
};

/// Warnings of wrong sign-in codes an account's owner gets: one an hour is news, more is noise.
const WRONG_CODE_WARNINGS: [Limit; 1] = [Limit::new(1, Duration::from_secs(3600))];

/// When a notification should leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Queued, with one attempt started in the background (the web pages: the sender waits for
    /// nothing).
    Background,
    /// Queued and tried once before answering (the CLI, which reports what happened).
    Now,
}

/// What became of a notification. Never a failure of the share: the sender has the link.
#[derive(Debug)]
pub enum Notice {
    /// Queued; its delivery runs in the background.
    Queued,
    /// Tried now: the outcome, or `None` when another worker already had the row.
    Tried(Option<Outcome>),
    /// Tried now and the outbox could not record the attempt (the server retries it).
    NotTried(String),
    /// Could not be built or stored: the sender must pass the link on.
    NotQueued(String),
}

#[derive(Clone)]
pub struct Mails {
    config: Arc<Config>,
    outbox: Outbox,
    mailer: Arc<dyn Mailer>,
    shares: ShareRepository,
    events: ShareEvents,
    limiter: RateLimiter,
    /// Whom the notice of a refused file goes to.
    scans: ScanFiles,
    /// Counts code mails by how they ended.
    metrics: crate::metrics::Metrics,
}

impl Mails {
    pub fn new(parts: &Parts) -> Self {
        Self {
            config: parts.config.clone(),
            outbox: Outbox::new(parts.db.clone(), &parts.secret_key).with_metrics(parts.metrics.clone()),
            mailer: parts.mailer.clone(),
            shares: ShareRepository::new(parts.db.clone()),
            events: ShareEvents::new(parts.db.clone()),
            limiter: RateLimiter::new(parts.db.clone()),
            scans: ScanFiles::new(parts.db.clone()),
            metrics: parts.metrics.clone(),
        }
    }

    /// The outbox the mails go through (for the delivery worker and the timeline).
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    pub fn mailer(&self) -> Arc<dyn Mailer> {
        self.mailer.clone()
    }

    /// The share (or request) a link mail is about; why no mail is queued when it cannot be read.
    async fn share_to_mail(&self, share_id: i64) -> Result<Share, Notice> {
        match self.shares.find_by_id(share_id).await {
            Ok(Some(share)) => Ok(share),
            Ok(None) => Err(Notice::NotQueued("the share is gone".to_owned())),
            Err(error) => Err(Notice::NotQueued(error.to_string())),
        }
    }

    /// Tells the recipient a file waits behind `link`, in `lang`, as from `sender`.
    pub async fn notify_recipient(
        &self,
        share_id: i64,
        sender: &User,
        link: &str,
        lang: Lang,
        delivery: Delivery,
    ) -> Notice {
        let share = match self.share_to_mail(share_id).await {
            Ok(share) => share,
            Err(notice) => return notice,
        };
        let expires = human_time(share.expires_at, lang);
        let files = match self.shares.files_for_mail(share_id).await {
            Ok(files) => files,
            Err(error) => return Notice::NotQueued(error.to_string()),
        };
        let named: Vec<(&str, String)> = files
            .iter()
            .filter(|(name_them, _, _)| *name_them)
            .take(FILES_LISTED)
            .map(|(_, name, bytes)| (name.as_str(), human_size(*bytes, lang)))
            .collect();
        let named: Vec<(&str, &str)> = named.iter().map(|(name, size)| (*name, size.as_str())).collect();
        let notification = Notification {
            sender_name: &sender.display_name,
            sender_email: &sender.email,
            message: &share.message,
            link,
            expires: &expires,
            files: &named,
            file_count: files.len(),
        };
        match notification_mail(&self.config.mail_origin(), &share.recipient_email, lang, &notification) {
            Ok(message) => self.send_link_mail(share_id, &message, delivery).await,
            Err(error) => Notice::NotQueued(format!("{error:#}")),
        }
    }

    /// Queues a mail that carries a share's link (a delivery's or a request's) and, for the
    /// CLI, tries it at once.
    async fn send_link_mail(&self, share_id: i64, message: &lettre::Message, delivery: Delivery) -> Notice {
        let kind = MailKind::ShareNotification;
        match delivery {
            Delivery::Background => match self.outbox.queue(Some(share_id), kind, message, self.mailer()).await {
                Ok(_) => Notice::Queued,
                Err(error) => Notice::NotQueued(error.to_string()),
            },
            Delivery::Now => match self.outbox.enqueue(Some(share_id), kind, message).await {
                Ok(id) => match self.outbox.deliver_one(self.mailer.as_ref(), id).await {
                    Ok(outcome) => Notice::Tried(outcome),
                    Err(error) => Notice::NotTried(error.to_string()),
                },
                Err(error) => Notice::NotQueued(error.to_string()),
            },
        }
    }

    /// Asks the uploader of request `share_id` for files behind `link`, in `lang`, as from
    /// `sender`. Queued as a link mail, so the outbox drops it once the request is no longer open.
    pub async fn ask_uploader(
        &self,
        share_id: i64,
        sender: &User,
        link: &str,
        lang: Lang,
        delivery: Delivery,
    ) -> Notice {
        let share = match self.share_to_mail(share_id).await {
            Ok(share) => share,
            Err(notice) => return notice,
        };
        let expires = human_time(share.expires_at, lang);
        let mail = RequestMail {
            sender_name: &sender.display_name,
            sender_email: &sender.email,
            message: &share.message,
            link,
            expires: &expires,
        };
        match request_mail(&self.config.mail_origin(), &share.recipient_email, lang, &mail) {
            Ok(message) => self.send_link_mail(share_id, &message, delivery).await,
            Err(error) => Notice::NotQueued(format!("{error:#}")),
        }
    }

    /// Queues the sender's news that the files of request `share_id` arrived, and tries it now.
    pub async fn tell_of_arrival(
        &self,
        share_id: i64,
        to: &str,
        lang: Lang,
        arrived: &Arrived<'_>,
    ) -> anyhow::Result<()> {
        let message = arrived_mail(&self.config.mail_origin(), to, lang, arrived)?;
        self.outbox.queue(Some(share_id), MailKind::FilesArrived, &message, self.mailer()).await?;
        Ok(())
    }

    /// Mails an invitation link through the outbox.
    pub async fn invite(&self, to: &str, lang: Lang, link: &str) -> Result<(), Fault> {
        let message = invitation_mail(&self.config.mail_origin(), to, lang, link)?;
        self.outbox
            .queue(None, MailKind::Invitation, &message, self.mailer())
            .await
            .map_err(|e| Fault::Internal(e.into()))?;
        Ok(())
    }

    /// Tells the owner that a sign-in with their password ended on wrong codes, through the
    /// outbox; at most one such mail an hour, however many sign-ins end so.
    pub async fn warn_of_wrong_codes(&self, user: &User) {
        match self.limiter.hit(&tries::warned_bucket(&user.email), &WRONG_CODE_WARNINGS).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(error) => return tracing::warn!(account_id = user.id, %error, "could not count wrong-code warnings"),
        }
        let lang = user.lang;
        let tries = tries::TRIES_PER_SIGN_IN;
        let message = match wrong_codes_mail(&self.config.mail_origin(), &user.email, lang, tries) {
            Ok(message) => message,
            Err(error) => return tracing::warn!(account_id = user.id, %error, "could not build the wrong-code warning"),
        };
        if let Err(error) = self.outbox.queue(None, MailKind::WrongCodesWarning, &message, self.mailer()).await {
            tracing::warn!(account_id = user.id, %error, "could not queue the wrong-code warning");
        }
    }

    /// The newest `limit` mails written to DATA_DIR/dev-mail when no SMTP relay is set (none when
    /// the folder is missing or unreadable: the page then shows an empty outbox).
    pub async fn dev_outbox(&self, limit: usize) -> Result<Vec<OutboxMail>, Fault> {
        let dir = self.config.settings.data_dir.join(crate::mail::DEV_MAIL_DIR);
        let mails = tokio::task::spawn_blocking(move || read_outbox(&dir, limit))
            .await
            .map_err(|e| Fault::Internal(e.into()))?;
        Ok(mails.unwrap_or_default())
    }

    /// Queues the sender's download receipt (if they asked for one) and tries to deliver it now;
    /// sent when the download completed, so it can say when it started and when it ended.
    pub fn spawn_download_receipt(&self, share_id: i64) {
        let mails = self.clone();
        tokio::spawn(async move { mails.send_download_receipt(share_id).await });
    }

    async fn send_download_receipt(&self, share_id: i64) {
        let target = match self.shares.receipt_target(share_id).await {
            Ok(Some(target)) => target,
            Ok(None) => return,
            Err(error) => return tracing::warn!(share_id, %error, "could not look up the download receipt"),
        };
        let lang = target.sender_lang;
        let zone = target.sender_time_zone.as_deref().and_then(TimeZone::parse);
        let reader = Reader { lang, zone };
        let time = |at: Option<crate::db::Timestamp>| at.map(|at| human_time(at, reader)).unwrap_or_default();
        let (started, completed) = (time(target.started_at), time(target.completed_at));
        let link = self.share_page(share_id);
        let receipt = Receipt {
            link: &link,
            recipient: &target.recipient_email,
            files: &target.file_names,
            started: &started,
            completed: &completed,
        };
        let message = match receipt_mail(&self.config.mail_origin(), &target.sender_email, lang, &receipt) {
            Ok(message) => message,
            Err(error) => return tracing::warn!(share_id, %error, "could not build the download receipt"),
        };
        if let Err(error) = self.outbox.queue(Some(share_id), MailKind::DownloadReceipt, &message, self.mailer()).await
        {
            tracing::warn!(share_id, %error, "could not queue the download receipt");
        }
    }

    /// The address of a share's page, which the sender's mails link to.
    fn share_page(&self, share_id: i64) -> String {
        self.config.url_for(&format!("/shares/{share_id}"))
    }

    /// Tells the sender of handover `handover_id`, in their language, which of its files the virus
    /// scan refused and why (those not told yet; once, whichever worker takes them); through the
    /// outbox, which retries it.
    pub async fn tell_of_refused_files(&self, handover_id: i64) {
        let target = match self.scans.take_untold(handover_id).await {
            Ok(Some(target)) => target,
            Ok(None) => return,
            Err(error) => return tracing::warn!(handover_id, %error, "could not look up the refusal notice"),
        };
        let scan = &target.sender_lang.text().dashboard.scan;
        let files: Vec<(String, String)> = target
            .files
            .into_iter()
            .map(|(name, state, finding)| (name, scan.mark(state, finding.as_deref())))
            .collect();
        let link = target.share_id.map_or_else(|| self.config.url_for("/shares"), |id| self.share_page(id));
        let notice = ScanNotice { files: &files, link: &link };
        let message =
            match scan_notice_mail(&self.config.mail_origin(), &target.sender_email, target.sender_lang, &notice) {
                Ok(message) => message,
                Err(error) => return tracing::warn!(handover_id, %error, "could not build the refusal notice"),
            };
        if let Err(error) = self.outbox.queue(target.share_id, MailKind::ScanRefused, &message, self.mailer()).await {
            tracing::warn!(handover_id, %error, "could not queue the refusal notice");
        }
    }

    /// Queues the notice that a share locked after too many wrong codes to its sender, and tries
    /// to deliver it now: until they unlock it or send a fresh link, the recipient is stuck.
    pub fn spawn_lock_notice(&self, share_id: i64) {
        let mails = self.clone();
        tokio::spawn(async move { mails.send_lock_notice(share_id).await });
    }

    async fn send_lock_notice(&self, share_id: i64) {
        let looked_up = async {
            Ok::<_, sqlx::Error>((
                self.shares.lock_target(share_id).await?,
                self.events.wrong_code_browsers(share_id).await?,
            ))
        };
        let (target, browsers) = match looked_up.await {
            Ok((Some(target), browsers)) => (target, browsers),
            Ok((None, _)) => return,
            Err(error) => return tracing::warn!(share_id, %error, "could not look up the lock notice"),
        };
        // A request's page is its own; a delivery's is the share page.
        let link = match self.shares.find_by_id(share_id).await {
            Ok(Some(share)) if share.is_request() => self.config.url_for(&format!("/requests/{share_id}")),
            _ => self.share_page(share_id),
        };
        let notice =
            LockNotice { recipient: &target.recipient_email, files: &target.file_names, browsers, link: &link };
        let message =
            match lock_notice_mail(&self.config.mail_origin(), &target.sender_email, target.sender_lang, &notice) {
                Ok(message) => message,
                Err(error) => return tracing::warn!(share_id, %error, "could not build the lock notice"),
            };
        if let Err(error) = self.outbox.queue(Some(share_id), MailKind::ShareLocked, &message, self.mailer()).await {
            tracing::warn!(share_id, %error, "could not queue the lock notice");
        }
    }
}
