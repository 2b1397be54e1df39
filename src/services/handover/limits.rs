//! The limits on code requests: per browser session and share, and per client address.

use std::{net::IpAddr, time::Duration};

use crate::{ratelimit::Limit, session::Session, share::Share};

/// Address submissions and "send a new code" for a code that no longer works, per browser session
/// and share: a person who mistypes gets at least three in a row ("send a new code" while the code
/// works mails it again and counts nothing). Matched or not, every request counts the same, so
/// the limit itself reveals nothing; a refused one counts nothing, and a new link or an unlock
/// starts afresh.
pub(super) const PER_SESSION: [Limit; 2] =
    [Limit::new(3, Duration::from_secs(10 * 60)), Limit::new(10, Duration::from_secs(24 * 3600))];
/// The same requests per client address, across shares and sessions: high enough that an office
/// behind one NAT address never meets it, low enough to stop one machine cycling sessions.
pub(super) const PER_CLIENT: [Limit; 1] = [Limit::new(200, Duration::from_secs(3600))];

/// The rate-limit buckets of the code step that belong to one share's current link (cleared with a
/// new link or an unlock); the per-share code-mail budget counts under it too. Every bucket of a
/// share starts with `share:{id}:`, which is how an account's deletion finds them.
pub fn code_limits(share_id: i64) -> String {
    format!("share:{share_id}:code:")
}

/// The code-request bucket of one browser session for one share.
pub(super) fn session_bucket(share: &Share, session: &Session) -> String {
    format!("{}session:{}", code_limits(share.id), session.id)
}

/// The code-request bucket of one client address, across shares and sessions.
pub(super) fn client_bucket(client: IpAddr) -> String {
    format!("code-request:client:{client}")
}
