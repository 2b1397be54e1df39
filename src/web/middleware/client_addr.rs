//! The client's address for rate limits and logs: the socket peer, unless the peer is one of the
//! configured trusted proxies; then the right-most address in the one header the operator named
//! (`WATASU_CLIENT_IP_HEADER`) that is not itself a trusted proxy. A client may send both headers
//! with anything in them: the other header is never read, and in the named one only what the
//! trusted proxies appended after the client's own entries is believed.

use std::{net::IpAddr, sync::Arc};

use ipnet::IpNet;
use poem::{Endpoint, Request, Response};

/// The address a request is attributed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The header a trusted proxy names the client in. Exactly one is believed: with two, a client
/// could pick its own address in whichever the proxy passes through untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientIpHeader {
    /// `X-Forwarded-For: client, proxy1`: what nginx's `$proxy_add_x_forwarded_for` and Caddy set.
    #[value(name = "x-forwarded-for")]
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
}

/// Whose word about the client is believed, and where it is read.
#[derive(Clone, Debug)]
pub struct TrustedProxies {
    pub networks: Vec<IpNet>,
    pub header: ClientIpHeader,
}

pub async fn client_addr<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    proxies: Arc<TrustedProxies>,
) -> poem::Result<Response>
where
    E::Output: poem::IntoResponse,
{
    use poem::IntoResponse;
    let peer = req.remote_addr().as_socket_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let forwarded = forwarded_chain(&req, proxies.header);
    let client = resolve(peer, &forwarded, &proxies.networks);
    req.extensions_mut().insert(ClientAddr(client));
    ep.call(req).await.map(IntoResponse::into_response)
}

/// The hops in `header`, in order (leftmost = farthest), over all its lines; `None` for a hop
/// that names no address (`unknown`, an obfuscated node, garbage).
fn forwarded_chain(req: &Request, header: ClientIpHeader) -> Vec<Option<IpAddr>> {
    let name = match header {
        ClientIpHeader::XForwardedFor => "x-forwarded-for",
        ClientIpHeader::Forwarded => "forwarded",
    };
    let elements = req.headers().get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
    match header {
        ClientIpHeader::XForwardedFor => elements.map(|a| parse_node(a.trim())).collect(),
        ClientIpHeader::Forwarded => elements
            .map(|element| {
                element.split(';').find_map(|pair| {
                    let (key, value) = pair.trim().split_once('=')?;
                    key.eq_ignore_ascii_case("for").then(|| parse_node(value))?
                })
            })
            .collect(),
    }
}

/// Parses `1.2.3.4`, `"[2001:db8::1]:443"` or `1.2.3.4:80`.
fn parse_node(value: &str) -> Option<IpAddr> {
    let value = value.trim().trim_matches('"');
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    value.parse().ok().or_else(|| value.rsplit_once(':')?.0.parse().ok())
}

fn resolve(peer: IpAddr, chain: &[Option<IpAddr>], trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    // Walk back from the proxy nearest to us; the first untrusted hop is the client. Anything
    // left of it was written by the client itself. A hop that names no address ends the walk at
    // the last proxy: what lies beyond it is unknown, not whatever the client wrote further left.
    let mut nearest_proxy = peer;
    for hop in chain.iter().rev() {
        match hop {
            Some(ip) if is_trusted(ip) => nearest_proxy = *ip,
            Some(ip) => return *ip,
            None => return nearest_proxy,
        }
    }
    nearest_proxy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let trusted = vec!["10.0.0.1/32".parse().unwrap()];
        assert_eq!(resolve(ip("203.0.113.9"), &[Some(ip("1.1.1.1"))], &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn behind_a_trusted_proxy_the_nearest_untrusted_hop_is_the_client() {
        let trusted = vec!["10.0.0.0/8".parse().unwrap()];
        // A client forged the first entry; the proxy appended the real peer after it.
        let chain = [Some(ip("6.6.6.6")), Some(ip("198.51.100.7")), Some(ip("10.0.0.2"))];
        assert_eq!(resolve(ip("10.0.0.1"), &chain, &trusted), ip("198.51.100.7"));
    }

    #[test]
    fn a_hop_that_names_no_address_stops_the_walk_at_the_last_proxy() {
        let trusted = vec!["10.0.0.0/8".parse().unwrap()];
        let chain = [Some(ip("6.6.6.6")), None, Some(ip("10.0.0.2"))];
        assert_eq!(resolve(ip("10.0.0.1"), &chain, &trusted), ip("10.0.0.2"));
        assert_eq!(resolve(ip("10.0.0.1"), &[], &trusted), ip("10.0.0.1"));
    }

    #[test]
    fn only_the_named_header_is_read() {
        let request = Request::builder()
            .header("forwarded", "for=198.51.100.66")
            .header("x-forwarded-for", "198.51.100.77")
            .finish();
        assert_eq!(forwarded_chain(&request, ClientIpHeader::XForwardedFor), [Some(ip("198.51.100.77"))]);
        assert_eq!(forwarded_chain(&request, ClientIpHeader::Forwarded), [Some(ip("198.51.100.66"))]);
    }

    #[test]
    fn node_forms_of_the_forwarded_header_parse() {
        assert_eq!(parse_node("\"[2001:db8::1]:443\""), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("192.0.2.1:80"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("unknown"), None);
    }
}
