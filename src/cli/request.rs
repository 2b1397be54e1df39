//! `watasu request create`: asks an uploader for files (mails them the link, prints it as the
//! last line); `watasu request list [--json]`: every request's state and what arrived.

use std::time::Duration;

use super::{command::parse_lang, usage};
use crate::{
    accounts::EmailAddress,
    config::{Config, parse_bytes, parse_duration},
    i18n::Lang,
    request::RequestLimits,
    services::{
        Services,
        mails::Delivery,
        requests::{FileRequest, RequestError},
    },
    share::{Message, ShareTtl, TtlError},
};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The requesting sender's account email: only they fetch what arrives.
    #[arg(long)]
    pub from: String,
    /// The uploader's email address: the codes go only here.
    #[arg(long)]
    pub to: String,
    /// A message for the uploader.
    #[arg(long, default_value = "")]
    pub message: String,
    /// How long the link works, like 1h or 7d (default WATASU_SHARE_TTL).
    #[arg(long, value_parser = parse_duration)]
    pub expires_in: Option<Duration>,
    /// Files the uploader may leave (default 10, at most 100).
    #[arg(long)]
    pub max_files: Option<u32>,
    /// The largest one file may be, like 50M (default: the total).
    #[arg(long, value_parser = parse_bytes)]
    pub max_file_size: Option<u64>,
    /// The most all files together may hold, like 500M (default WATASU_MAX_UPLOAD_BYTES).
    #[arg(long, value_parser = parse_bytes)]
    pub max_total_size: Option<u64>,
    /// Language of the uploader's mail and pages: ja or en (default: the sender's).
    #[arg(long, value_parser = parse_lang)]
    pub lang: Option<Lang>,
}

pub async fn create(config: &Config, args: CreateArgs) -> anyhow::Result<()> {
    let settings = &config.settings;
    let sender_email = EmailAddress::parse(&args.from).map_err(|e| usage(format!("--from: {e}")))?;
    let uploader = EmailAddress::parse(&args.to).map_err(|e| usage(format!("--to {}: {e}", args.to)))?;
    if uploader.looks_mistyped() {
        eprintln!("warning: --to {}: the part after the @ looks mistyped; sending anyway", uploader.as_str());
    }
    let message = Message::parse(&args.message).map_err(|e| usage(format!("--message: {e}")))?;
    let ttl = ShareTtl::parse(args.expires_in.unwrap_or(settings.share_ttl), settings.share_ttl_max)
        .map_err(|e| usage(if e == TtlError::TooShort { e.to_string() } else { format!("--expires-in {e}") }))?;
    let limits =
        RequestLimits::parse(args.max_files, args.max_file_size, args.max_total_size, settings.max_upload_bytes)
            .map_err(|e| usage(e.to_string()))?;

    let services = Services::open(config).await?;
    let sender = services
        .accounts
        .active_by_email(&sender_email)
        .await?
        .ok_or_else(|| usage(format!("--from: no active sender account for {}", sender_email.as_str())))?;
    let request = FileRequest { uploader, message, ttl, limits, lang: args.lang.unwrap_or(sender.lang) };
    let created = services.requests.create(&sender, request, Delivery::Now).await.map_err(|e| match e {
        RequestError::SenderDisabled => usage(e.to_string()),
        RequestError::Fault(fault) => fault.into(),
    })?;
    super::share::report_notice(&created.notice, &args.to);
    crate::outln!("request {} created for {}", created.share_id, args.to);
    // The link last: a script takes it from the end of the output.
    crate::outln!("{}", created.link);
    services.close().await;
    Ok(())
}

/// `watasu request list [--json]`: id, state, uploader, when answered, and the files that arrived.
pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let requests = services.requests.list_all().await?;
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&requests)?);
    } else {
        crate::outln!("id\tstate\tsender\tuploader\tfiles");
        for request in &requests {
            crate::outln!(
                "{}\t{}\t{}\t{}\t{}",
                request.id,
                request.state,
                request.sender_email,
                request.uploader_email,
                request.files.len()
            );
        }
    }
    services.close().await;
    Ok(())
}
