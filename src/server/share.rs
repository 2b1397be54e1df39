//! Each client's share of the connection cap: one address (one IPv6 /64, which one subscriber
//! usually holds whole) keeps at most a fraction of the connections open, so the rest stay free
//! for everyone else. Reverse proxies named in `WATASU_TRUSTED_PROXIES` carry many clients on
//! their connections and are held only to the cap; the proxy limits each client in front.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv6Addr},
    sync::{Arc, Mutex},
};

use futures_util::FutureExt;
use ipnet::IpNet;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// One client may hold this fraction (1/N) of `WATASU_MAX_CONNECTIONS` unless the operator sets
/// its own share: a browser opens at most six connections to a host, so an eighth of the default
/// 512 (64) serves ten busy browsers behind one address, and one address alone leaves seven eighths.
pub const SHARE_DIVISOR: u32 = 8;

/// The default share of one client when the cap is `max_connections`.
pub fn default_per_client(max_connections: u32) -> u32 {
    (max_connections / SHARE_DIVISOR).max(1)
}

/// The answer to a connection over its client's share, written without reading the request (the
/// connection takes no slot and no task): a client that opened too many learns why, and when.
const OVER_SHARE: &[u8] =
    b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 10\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The open connections per client.
pub struct ClientShares {
    per_client: usize,
    exempt: Vec<IpNet>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its client's share, until dropped.
pub struct Counted {
    shares: Arc<ClientShares>,
    client: Option<IpAddr>,
}

impl ClientShares {
    pub fn new(per_client: usize, exempt: Vec<IpNet>) -> Arc<Self> {
        Arc::new(Self { per_client, exempt, open: Mutex::new(HashMap::new()) })
    }

    /// Counts a new connection from `peer`, or `None` when its client already holds its share.
    pub fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Option<Counted> {
        let client = peer.map(client_of).filter(|ip| !self.exempt.iter().any(|net| net.contains(ip)));
        if let Some(client) = client {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let count = open.entry(client).or_insert(0);
            if *count >= self.per_client {
                return None;
            }
            *count += 1;
        }
        Some(Counted { shares: self.clone(), client })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let Some(client) = self.client else { return };
        let mut open = self.shares.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&client);
            }
        }
    }
}

/// The unit a share is counted in: the address, or its /64 for IPv6 (an IPv4 address mapped
/// into IPv6 is the IPv4 address).
fn client_of(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// Answers a connection over its share and closes it, in one try: a socket that cannot take the
/// few bytes at once is closed without them rather than waited for.
pub fn refuse<Io: AsyncWrite + Unpin>(mut io: Io) {
    if let Some(Ok(_)) = io.write(OVER_SHARE).now_or_never() {
        let _ = io.shutdown().now_or_never();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn one_client_holds_at_most_its_share_and_gets_it_back_as_connections_close() {
        let shares = ClientShares::new(2, Vec::new());
        let first = shares.admit(ip("203.0.113.9")).unwrap();
        let _second = shares.admit(ip("203.0.113.9")).unwrap();
        assert!(shares.admit(ip("203.0.113.9")).is_none(), "a third connection past the share of two");
        assert!(shares.admit(ip("203.0.113.10")).is_some(), "another address has its own share");
        drop(first);
        assert!(shares.admit(ip("203.0.113.9")).is_some(), "a closed connection frees its place");
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64_and_a_mapped_ipv4_address_is_the_ipv4_one() {
        let shares = ClientShares::new(1, Vec::new());
        let _held = shares.admit(ip("2001:db8:1:2::1")).unwrap();
        assert!(shares.admit(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")).is_none(), "same /64");
        assert!(shares.admit(ip("2001:db8:1:3::1")).is_some(), "another /64");
        let _v4 = shares.admit(ip("198.51.100.4")).unwrap();
        assert!(shares.admit(ip("::ffff:198.51.100.4")).is_none(), "the same IPv4 client");
    }

    #[test]
    fn a_trusted_proxy_is_held_only_to_the_cap() {
        let shares = ClientShares::new(1, vec!["127.0.0.1/32".parse().unwrap()]);
        let held: Vec<_> = (0..5).map(|_| shares.admit(ip("127.0.0.1"))).collect();
        assert!(held.iter().all(Option::is_some));
    }

    #[test]
    fn the_default_share_is_an_eighth_and_at_least_one() {
        assert_eq!(default_per_client(512), 64);
        assert_eq!(default_per_client(3), 1);
    }
}
