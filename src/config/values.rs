//! Parsers of the flags' values that are more than a type's own `FromStr`: each answers the one
//! line a refused value prints.

use ipnet::IpNet;
use url::Url;

use super::BasePath;

pub(super) fn parse_base_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("'{text}' is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("'{text}' must be an http:// or https:// address"));
    }
    BasePath::from_url(&url)?;
    Ok(url)
}

/// An address (`10.0.0.1`) or a network (`10.0.0.0/8`).
pub(super) fn parse_net(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(IpNet::from))
        .map_err(|_| format!("'{text}' is not an IP address or network"))
}

pub(super) fn parse_database_url(text: &str) -> Result<String, String> {
    if text.starts_with("sqlite:") || text.starts_with("postgres://") || text.starts_with("postgresql://") {
        Ok(text.to_owned())
    } else {
        Err("must start with sqlite:, postgres:// or postgresql://".to_owned())
    }
}

pub(super) fn parse_mailbox(text: &str) -> Result<lettre::message::Mailbox, String> {
    text.parse().map_err(|e| format!("'{text}' is not a mail address ({e})"))
}
