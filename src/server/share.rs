//! Each client's share of the connection cap: one network (an IPv4 /24 and an IPv6 /56 by
//! default, what one subscriber or one small site can take addresses from at will) keeps at most
//! a fraction of the connections open, so the rest stay free for everyone else: however many
//! addresses of its network a client uses, it cannot take the places of another network.
//! Reverse proxies named in `WATASU_TRUSTED_PROXIES` carry many clients on their connections and
//! are held only to the cap; the proxy limits each client in front.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
};

use futures_util::FutureExt;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
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

/// The prefix lengths of the networks counted as one client, from the settings.
#[derive(Clone, Copy, Debug)]
pub struct ClientPrefixes {
    pub v4: u8,
    pub v6: u8,
}

/// The open connections per client.
pub struct ClientShares {
    per_client: usize,
    prefixes: ClientPrefixes,
    exempt: Vec<IpNet>,
    open: Mutex<HashMap<IpNet, usize>>,
}

/// One connection counted against its client's share, until dropped.
pub struct Counted {
    shares: Arc<ClientShares>,
    client: Option<IpNet>,
}

impl ClientShares {
    pub fn new(per_client: usize, prefixes: ClientPrefixes, exempt: Vec<IpNet>) -> Arc<Self> {
        Arc::new(Self { per_client, prefixes, exempt, open: Mutex::new(HashMap::new()) })
    }

    /// Counts a new connection from `peer`, or `None` when its client already holds its share.
    pub fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Option<Counted> {
        let peer = peer.map(|ip| ip.to_canonical()).filter(|ip| !self.exempt.iter().any(|net| net.contains(ip)));
        let client = peer.map(|ip| network_of(ip, self.prefixes));
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

/// The unit a share is counted in: the network of `peer` (an IPv4 address mapped into IPv6 is
/// the IPv4 address). A prefix length out of range (the settings refuse one) counts the address.
fn network_of(peer: IpAddr, prefixes: ClientPrefixes) -> IpNet {
    match peer.to_canonical() {
        IpAddr::V4(v4) => Ipv4Net::new(v4, prefixes.v4).map_or(IpNet::from(IpAddr::V4(v4)), |net| net.trunc().into()),
        IpAddr::V6(v6) => Ipv6Net::new(v6, prefixes.v6).map_or(IpNet::from(IpAddr::V6(v6)), |net| net.trunc().into()),
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

    const DEFAULTS: ClientPrefixes = ClientPrefixes { v4: 24, v6: 56 };
    const ADDRESSES: ClientPrefixes = ClientPrefixes { v4: 32, v6: 128 };

    #[test]
    fn one_client_holds_at_most_its_share_and_gets_it_back_as_connections_close() {
        let shares = ClientShares::new(2, DEFAULTS, Vec::new());
        let first = shares.admit(ip("203.0.113.9")).unwrap();
        let _second = shares.admit(ip("203.0.113.9")).unwrap();
        assert!(shares.admit(ip("203.0.113.9")).is_none(), "a third connection past the share of two");
        assert!(shares.admit(ip("203.0.114.9")).is_some(), "another network has its own share");
        drop(first);
        assert!(shares.admit(ip("203.0.113.9")).is_some(), "a closed connection frees its place");
    }

    #[test]
    fn every_address_of_an_ipv4_slash_24_and_an_ipv6_slash_56_is_one_client_by_default() {
        let shares = ClientShares::new(1, DEFAULTS, Vec::new());
        let _v4 = shares.admit(ip("198.51.100.4")).unwrap();
        assert!(shares.admit(ip("198.51.100.250")).is_none(), "same /24");
        assert!(shares.admit(ip("::ffff:198.51.100.9")).is_none(), "a mapped address of the same /24");
        assert!(shares.admit(ip("198.51.101.4")).is_some(), "another /24");
        let _v6 = shares.admit(ip("2001:db8:1:200::1")).unwrap();
        assert!(shares.admit(ip("2001:db8:1:2ff:ffff:ffff:ffff:ffff")).is_none(), "same /56");
        assert!(shares.admit(ip("2001:db8:1:300::1")).is_some(), "another /56");
    }

    #[test]
    fn the_prefix_lengths_are_the_operators_to_choose() {
        let shares = ClientShares::new(1, ADDRESSES, Vec::new());
        let _v4 = shares.admit(ip("198.51.100.4")).unwrap();
        assert!(shares.admit(ip("198.51.100.5")).is_some(), "/32: each address alone");
        let _v6 = shares.admit(ip("2001:db8::1")).unwrap();
        assert!(shares.admit(ip("2001:db8::2")).is_some(), "/128: each address alone");
        assert!(shares.admit(ip("198.51.100.4")).is_none(), "the same address is still one client");
    }

    #[test]
    fn a_trusted_proxy_is_held_only_to_the_cap() {
        let shares = ClientShares::new(1, DEFAULTS, vec!["127.0.0.1/32".parse().unwrap()]);
        let held: Vec<_> = (0..5).map(|_| shares.admit(ip("127.0.0.1"))).collect();
        assert!(held.iter().all(Option::is_some));
    }

    #[test]
    fn the_default_share_is_an_eighth_and_at_least_one() {
        assert_eq!(default_per_client(512), 64);
        assert_eq!(default_per_client(3), 1);
    }
}
