//! `watasu send`: files from this machine to recipients, through a watasu server's API. Every
//! rule (limits, addresses, the validity) is the server's; what is checked here first is only
//! what would otherwise be found after a long upload: the addresses, the files, the token.

use std::path::PathBuf;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Value, json};

use super::{Server, tus};
use crate::{accounts::EmailAddress, i18n::Lang, outln};

#[derive(clap::Args)]
pub struct SendArgs {
    /// The files to hand over, in this order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A recipient's address (repeat for several): each gets their own link, and their codes
    /// are sent only there.
    #[arg(long, required = true, value_name = "ADDRESS")]
    pub to: Vec<String>,
    /// The watasu server, like https://files.example.com.
    #[arg(long, env = "WATASU_SERVER", value_name = "URL")]
    pub server: String,
    /// Send the API token (and the files) over plain http:// to a host that is not this machine,
    /// unencrypted: anyone on the network between can read the token and use it. Without it,
    /// an http:// --server must be localhost, 127.0.0.0/8 or ::1.
    #[arg(long)]
    pub allow_insecure_http: bool,
    /// A file holding the API token (without it, WATASU_TOKEN holds it).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// A message for the recipients, in their mail.
    #[arg(long, default_value = "")]
    pub message: String,
    /// How long the links work, like 12h or 7d (the server's default without it).
    #[arg(long, value_parser = duration_text)]
    pub expires_in: Option<String>,
    /// The language of the recipients' mails and pages: ja or en (the token owner's without it).
    #[arg(long, value_parser = crate::cli::command::parse_lang)]
    pub lang: Option<Lang>,
    /// Mail the token's owner when a recipient downloads.
    #[arg(long)]
    pub notify_on_download: bool,
    /// Let the recipients reply with files from their download page.
    #[arg(long)]
    pub allow_reply: bool,
    /// Print the server's JSON answer instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// A duration as the server reads it, checked here so a typo fails before the upload.
fn duration_text(text: &str) -> Result<String, String> {
    crate::config::parse_duration(text).map(|_| text.trim().to_owned())
}

/// Uploads the files, makes the handover, prints each recipient's link and the handover's id.
pub async fn send(args: SendArgs) -> anyhow::Result<()> {
    let token = super::token(args.token_file.as_ref())?;
    let server = Server::new(&args.server, token, args.allow_insecure_http)?;
    let recipients = args
        .to
        .iter()
        .map(|to| EmailAddress::parse(to).map(|a| a.as_str().to_owned()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(crate::cli::usage)?;
    let files = args.files.iter().map(named).collect::<anyhow::Result<Vec<_>>>()?;
    server.check_token("shares:write").await?;

    let mut upload_ids = Vec::with_capacity(files.len());
    for (path, name) in &files {
        let id = tus::upload(&server, path, name).await.with_context(|| format!("sending {}", path.display()))?;
        upload_ids.push(id);
    }
    let mut body = json!({
        "recipients": recipients,
        "upload_ids": upload_ids,
        "message": args.message,
        "notify_on_download": args.notify_on_download,
        "allow_reply": args.allow_reply,
    });
    if let Some(ttl) = args.expires_in {
        body["ttl"] = ttl.into();
    }
    if let Some(lang) = args.lang {
        body["lang"] = lang.code().into();
    }
    let made = server.api(Method::POST, "handovers", Some(&body)).await.context("making the handover")?;
    print(&made, args.json)
}

/// The file at `path` with the name the recipients see; a usage error when it is no readable file.
fn named(path: &PathBuf) -> anyhow::Result<(PathBuf, String)> {
    let metadata = std::fs::metadata(path).map_err(|e| crate::cli::usage(format!("{}: {e}", path.display())))?;
    if !metadata.is_file() {
        return Err(crate::cli::usage(format!("{} is not a file", path.display())));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.ok_or_else(|| crate::cli::usage(format!("{} has no file name", path.display())))?;
    Ok((path.clone(), name))
}

/// Each recipient and their link, then `handover ID` as the last line (for `watasu status`).
fn print(made: &Value, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{made:#}");
        return Ok(());
    }
    let shares = made["shares"].as_array().map(Vec::as_slice).unwrap_or_default();
    let width = shares.iter().filter_map(|s| s["recipient"].as_str()).map(str::len).max().unwrap_or(0);
    for share in shares {
        let recipient = share["recipient"].as_str().unwrap_or_default();
        outln!("{recipient:<width$}  {}", share["link"].as_str().unwrap_or_default());
    }
    let id = shares.first().and_then(|s| s["id"].as_i64()).context("the server answered no share")?;
    outln!("handover {id}");
    Ok(())
}
