//! The address guard: a webhook never reaches an internal address (the cloud's metadata service, a
//! database on the private network, the host itself) unless the operator allows that network with
//! `WATASU_WEBHOOK_ALLOW_NETWORKS`. The host is resolved and every address checked before each
//! connection; the sender then connects only to the address checked (see `send`), so a name that
//! resolves differently a moment later reaches nothing new. An address naming port 0 is refused
//! before any of that: it reaches no server, and a stack may read it as "any port".

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::LazyLock,
    time::Duration,
};

use ipnet::IpNet;
use url::Url;

/// Networks no webhook reaches unless allowed: private, loopback, link-local, unique-local, CGNAT,
/// multicast, unspecified, reserved, documentation, discard and broadcast; the local-use NAT64
/// prefix and IPv4-compatible addresses (a gateway could carry them to any IPv4 address); Teredo
/// and 6to4, whose packets a relay outside the operator's view carries to whatever IPv4 address
/// the tunnel names (refused whole: no receiver is reachable only through a tunnel).
/// IPv4-mapped and well-known NAT64 forms are checked as the IPv4 address they carry.
const REFUSED: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "2001::/32",
    "2002::/16",
    "2001:db8::/32",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
];

/// A name's lookup ends after this long: a resolver that never answers holds neither the
/// registration form nor the delivery worker.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a URL may not be reached.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the address must start with https:// (or http:// to a network the operator allows)")]
    Scheme,
    #[error("the address names no host")]
    NoHost,
    #[error("the address {0} is private, loopback or link-local")]
    Internal(IpAddr),
    #[error("the address is plain http:// and {0} is not in a network the operator allows")]
    PlainHttp(IpAddr),
    #[error("the host could not be resolved")]
    Unresolved,
    #[error("the host's name did not resolve within {} seconds", LOOKUP_TIMEOUT.as_secs())]
    LookupTimedOut,
    #[error("the address names port 0, which no server listens on")]
    PortZero,
}

/// Where one delivery may go: the URL and the one address checked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub url: Url,
    pub host: String,
    pub addr: SocketAddr,
}

/// The guard of one instance, with the networks its operator allows.
#[derive(Clone, Debug, Default)]
pub struct AddressGuard {
    allowed: Vec<IpNet>,
}

impl AddressGuard {
    pub fn new(allowed: Vec<IpNet>) -> Self {
        Self { allowed }
    }

    fn is_allowed(&self, ip: IpAddr) -> bool {
        self.allowed.iter().any(|net| net.contains(&ip))
    }

    /// Refuses an internal address outside the allowed networks.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        if is_internal(ip) && !self.is_allowed(ip) { Err(Refusal::Internal(ip)) } else { Ok(()) }
    }

    /// The scheme, port and host of a URL, before any lookup.
    pub fn check_form(url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "https" | "http") {
            return Err(Refusal::Scheme);
        }
        if url.port() == Some(0) {
            return Err(Refusal::PortZero);
        }
        url.host_str().filter(|host| !host.is_empty()).ok_or(Refusal::NoHost).map(drop)
    }

    /// Resolves the URL's host and checks every address it has; answers the first to connect to.
    /// Every address must pass, so that no answer of the name leads inside.
    pub async fn resolve(&self, url: &Url) -> Result<Target, Refusal> {
        Self::check_form(url)?;
        let host = url.host_str().ok_or(Refusal::NoHost)?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = url.port_or_known_default().ok_or(Refusal::Scheme)?;
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => within(LOOKUP_TIMEOUT, tokio::net::lookup_host((host.as_str(), port))).await?.collect(),
        };
        let first = *addrs.first().ok_or(Refusal::Unresolved)?;
        for addr in &addrs {
            self.check_ip(addr.ip())?;
        }
        if url.scheme() == "http" && !addrs.iter().all(|addr| self.is_allowed(addr.ip())) {
            return Err(Refusal::PlainHttp(first.ip()));
        }
        Ok(Target { url: url.clone(), host, addr: first })
    }
}

/// A lookup's answer, or [`Refusal::LookupTimedOut`] after `deadline`.
async fn within<T>(deadline: Duration, lookup: impl Future<Output = std::io::Result<T>>) -> Result<T, Refusal> {
    match tokio::time::timeout(deadline, lookup).await {
        Ok(answer) => answer.map_err(|_| Refusal::Unresolved),
        Err(_) => Err(Refusal::LookupTimedOut),
    }
}

/// True for an address in one of the [`REFUSED`] networks, also in its IPv4-mapped form.
pub fn is_internal(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().or_else(|| carried_ipv4(v6)).map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    if ip == IpAddr::V4(Ipv4Addr::BROADCAST) {
        return true;
    }
    static NETWORKS: LazyLock<Vec<IpNet>> =
        LazyLock::new(|| REFUSED.iter().map(|net| net.parse().expect("a network")).collect());
    NETWORKS.iter().any(|net| net.contains(&ip))
}

/// The IPv4 address in the well-known NAT64 prefix 64:ff9b::/96.
fn carried_ipv4(v6: std::net::Ipv6Addr) -> Option<Ipv4Addr> {
    let o = v6.octets();
    (o[..12] == [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]).then(|| Ipv4Addr::new(o[12], o[13], o[14], o[15]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_refused_in_every_form() {
        for text in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "::7f00:1",
            "2002:a9fe:a9fe::1",
            "2001:db8::1",
            "fec0::1",
            "100::1",
            "192.0.2.1",
        ] {
            assert!(is_internal(ip(text)), "{text}");
        }
        for text in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
            assert!(!is_internal(ip(text)), "{text}");
        }
    }

    /// Each range's first and last address inside, and the first outside on either side.
    #[test]
    fn the_carried_and_tunnelled_ranges_are_refused_to_their_edges() {
        let refused = [
            // IPv4-mapped ::ffff:0:0/96 and NAT64 64:ff9b::/96: the IPv4 rules at 10.0.0.0/8's edges.
            "::ffff:0.0.0.0",
            "::ffff:10.0.0.0",
            "::ffff:10.255.255.255",
            "::ffff:255.255.255.255",
            "64:ff9b::",
            "64:ff9b::a00:0",
            "64:ff9b::aff:ffff",
            "64:ff9b::ffff:ffff",
            // Teredo 2001::/32 and 6to4 2002::/16, whatever they carry.
            "2001::",
            "2001:0:ffff:ffff:ffff:ffff:ffff:ffff",
            "2002::",
            "2002:808:808::1",
            "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ];
        for text in refused {
            assert!(is_internal(ip(text)), "{text}");
        }
        let passed = [
            "::ffff:9.255.255.255",
            "::ffff:11.0.0.0",
            "64:ff9b::9ff:ffff",
            "64:ff9b::b00:0",
            // Just outside the two prefixes, the low 32 bits are no IPv4 address.
            "::fffe:a00:1",
            "::1:0:a00:1",
            "64:ff9a:ffff:ffff:ffff:ffff:a00:1",
            "64:ff9b::1:a00:1",
            "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:1::",
            "2003::",
        ];
        for text in passed {
            assert!(!is_internal(ip(text)), "{text}");
        }
    }

    #[test]
    fn an_allowed_tunnel_range_lets_its_addresses_through() {
        let guard = AddressGuard::new(vec!["2002::/16".parse().unwrap(), "2001::/32".parse().unwrap()]);
        assert_eq!(guard.check_ip(ip("2002:808:808::1")), Ok(()));
        assert_eq!(guard.check_ip(ip("2001:0:4136:e378::1")), Ok(()));
        assert_eq!(AddressGuard::default().check_ip(ip("2001::1")), Err(Refusal::Internal(ip("2001::1"))));
    }

    #[tokio::test]
    async fn port_zero_is_refused_before_any_lookup_and_other_ports_are_not() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert_eq!(AddressGuard::check_form(&url("https://hooks.example.test:0/")), Err(Refusal::PortZero));
        assert_eq!(AddressGuard::check_form(&url("http://[2606:2800::1]:0/")), Err(Refusal::PortZero));
        for ok in ["https://hooks.example.test:1/", "https://hooks.example.test:65535/", "https://hooks.example.test/"]
        {
            assert_eq!(AddressGuard::check_form(&url(ok)), Ok(()), "{ok}");
        }
        let guard = AddressGuard::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert_eq!(guard.resolve(&url("http://127.0.0.1:0/hook")).await, Err(Refusal::PortZero));
        assert_eq!(guard.resolve(&url("https://93.184.215.14:0/")).await, Err(Refusal::PortZero));
    }

    #[test]
    fn an_allowed_network_lets_its_addresses_through_and_no_others() {
        let guard = AddressGuard::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert_eq!(guard.check_ip(ip("127.0.0.1")), Ok(()));
        assert_eq!(guard.check_ip(ip("10.0.0.1")), Err(Refusal::Internal(ip("10.0.0.1"))));
        assert_eq!(AddressGuard::default().check_ip(ip("127.0.0.1")), Err(Refusal::Internal(ip("127.0.0.1"))));
    }

    #[tokio::test]
    async fn a_lookup_that_never_answers_ends_at_its_deadline() {
        let deadline = Duration::from_millis(20);
        let never = std::future::pending::<std::io::Result<()>>();
        assert_eq!(within(deadline, never).await, Err(Refusal::LookupTimedOut));
        let failed = async { Err::<(), _>(std::io::Error::other("no such host")) };
        assert_eq!(within(deadline, failed).await, Err(Refusal::Unresolved));
        assert_eq!(within(deadline, async { Ok(7) }).await, Ok(7));
    }

    #[tokio::test]
    async fn plain_http_goes_only_to_an_allowed_network_and_other_schemes_nowhere() {
        let guard = AddressGuard::new(vec!["127.0.0.0/8".parse().unwrap()]);
        let url = |text: &str| Url::parse(text).unwrap();
        let target = guard.resolve(&url("http://127.0.0.1:9/hook")).await.unwrap();
        assert_eq!(target.addr, "127.0.0.1:9".parse().unwrap());
        assert_eq!(guard.resolve(&url("http://93.184.215.14/")).await, Err(Refusal::PlainHttp(ip("93.184.215.14"))));
        assert_eq!(guard.resolve(&url("ftp://93.184.215.14/")).await, Err(Refusal::Scheme));
        assert_eq!(
            guard.resolve(&url("https://169.254.169.254/latest")).await,
            Err(Refusal::Internal(ip("169.254.169.254")))
        );
        assert_eq!(
            guard.resolve(&url("https://[::ffff:10.0.0.1]/")).await,
            Err(Refusal::Internal(ip("::ffff:10.0.0.1")))
        );
    }
}
