//! `watasu token create`: makes a personal API token for a sender and prints it once, as the
//! last line; `watasu token list [--user EMAIL] [--json]`; `watasu token revoke ID_OR_PREFIX`.

use super::usage;
use crate::{
    accounts::{
        EmailAddress,
        tokens::{Scopes, TokenName, shown_prefix},
    },
    config::Config,
    services::{
        Services,
        tokens::{NewToken, TokenExpiry},
    },
};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The sender the token acts for (their account email).
    #[arg(long)]
    pub user: String,
    /// A label that says where the token is used ("CI deploy").
    #[arg(long)]
    pub name: String,
    /// What the token may do: shares:read, shares:write, requests:read, requests:write,
    /// webhooks:read, webhooks:write (repeat for several).
    #[arg(long = "scope", required = true)]
    pub scopes: Vec<String>,
    /// How long the token works, like 30d, 90d or 1y, or never (default 90d).
    #[arg(long, default_value = "90d", value_parser = TokenExpiry::parse)]
    pub expires_in: TokenExpiry,
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// Only this sender's tokens.
    #[arg(long)]
    pub user: Option<String>,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

pub async fn create(config: &Config, args: CreateArgs) -> anyhow::Result<()> {
    let email = EmailAddress::parse(&args.user).map_err(|e| usage(format!("--user: {e}")))?;
    let name = TokenName::parse(&args.name).ok_or_else(|| usage("--name: 1 to 64 characters on one line"))?;
    let scopes = Scopes::parse(args.scopes.iter().map(String::as_str)).map_err(|e| usage(format!("--scope: {e}")))?;
    let services = Services::open(config).await?;
    let user = services
        .accounts
        .active_by_email(&email)
        .await?
        .ok_or_else(|| usage(format!("--user: no active sender account for {}", email.as_str())))?;
    let created = services.tokens.create(&user, NewToken { name, scopes, expiry: args.expires_in }).await?;
    crate::outln!(
        "token {} ({}) created for {}; it is shown only now:",
        created.id,
        shown_prefix(&created.lookup_id),
        email.as_str()
    );
    // The token last: a script takes it from the end of the output.
    crate::outln!("{}", created.token.expose());
    services.close().await;
    Ok(())
}

/// `watasu token list`: id, prefix, owner, name, scopes, and when it expires, was used or revoked.
pub async fn list(config: &Config, args: ListArgs) -> anyhow::Result<()> {
    let only = match &args.user {
        Some(user) => Some(EmailAddress::parse(user).map_err(|e| usage(format!("--user: {e}")))?),
        None => None,
    };
    let services = Services::open(config).await?;
    let mut tokens = services.tokens.list_all().await?;
    tokens.retain(|t| only.as_ref().is_none_or(|email| t.email == email.as_str()));
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&tokens)?);
    } else {
        crate::outln!("id\tprefix\tuser\tname\tscopes\texpires\tlast used\trevoked");
        let time = |at: Option<crate::db::Timestamp>, none: &str| at.map_or(none.to_owned(), |at| at.0.to_rfc3339());
        for t in &tokens {
            crate::outln!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                t.id,
                shown_prefix(&t.lookup_id),
                t.email,
                t.name,
                t.scopes.0.code(),
                time(t.expires_at, "never"),
                time(t.last_used_at, "never"),
                time(t.revoked_at, "-"),
            );
        }
    }
    services.close().await;
    Ok(())
}

/// `watasu token revoke ID_OR_PREFIX`: the token stops working at once.
pub async fn revoke(config: &Config, id_or_prefix: &str) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let revoked = services.tokens.revoke_named(id_or_prefix).await?;
    services.close().await;
    let revoked = revoked.ok_or_else(|| usage(format!("no live token {id_or_prefix}")))?;
    crate::outln!("token {} ({}) of {} revoked", revoked.id, shown_prefix(&revoked.lookup_id), revoked.email);
    Ok(())
}
