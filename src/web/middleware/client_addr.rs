//! The client's address for rate limits and logs: the socket peer, unless the peer is one of the
//! configured trusted proxies; then the nearest address in Forwarded / X-Forwarded-For that is not
//! itself a trusted proxy. Nobody else can choose the address we see.

use std::{net::IpAddr, sync::Arc};

use ipnet::IpNet;
use poem::{Endpoint, Request, Response};

/// The address a request is attributed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

pub async fn client_addr<E: Endpoint>(ep: Arc<E>, mut req: Request, trusted: Arc<Vec<IpNet>>) -> poem::Result<Response>
where
    E::Output: poem::IntoResponse,
{
    use poem::IntoResponse;
    let peer = req.remote_addr().as_socket_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let forwarded = forwarded_chain(&req);
    let client = resolve(peer, &forwarded, &trusted);
    req.extensions_mut().insert(ClientAddr(client));
    ep.call(req).await.map(IntoResponse::into_response)
}

/// The addresses proxies appended, in order (leftmost = farthest). `Forwarded` wins when present.
fn forwarded_chain(req: &Request) -> Vec<IpAddr> {
    let forwarded: Vec<_> = req.headers().get_all("forwarded").iter().filter_map(|v| v.to_str().ok()).collect();
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .flat_map(|v| v.split(','))
            .filter_map(|element| {
                element.split(';').find_map(|pair| {
                    let (key, value) = pair.trim().split_once('=')?;
                    key.eq_ignore_ascii_case("for").then(|| parse_node(value))?
                })
            })
            .collect();
    }
    req.headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| parse_node(a.trim()))
        .collect()
}

/// Parses `1.2.3.4`, `"[2001:db8::1]:443"` or `1.2.3.4:80`.
fn parse_node(value: &str) -> Option<IpAddr> {
    let value = value.trim().trim_matches('"');
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    value.parse().ok().or_else(|| value.rsplit_once(':')?.0.parse().ok())
}

fn resolve(peer: IpAddr, chain: &[IpAddr], trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    // Walk back from the proxy nearest to us; the first untrusted hop is the client.
    chain.iter().rev().find(|ip| !is_trusted(ip)).or(chain.first()).copied().unwrap_or(peer)
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
        assert_eq!(resolve(ip("203.0.113.9"), &[ip("1.1.1.1")], &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn behind_a_trusted_proxy_the_nearest_untrusted_hop_is_the_client() {
        let trusted = vec!["10.0.0.0/8".parse().unwrap()];
        // A client forged the first entry; the proxy appended the real peer after it.
        let chain = [ip("6.6.6.6"), ip("198.51.100.7"), ip("10.0.0.2")];
        assert_eq!(resolve(ip("10.0.0.1"), &chain, &trusted), ip("198.51.100.7"));
    }

    #[test]
    fn node_forms_of_the_forwarded_header_parse() {
        assert_eq!(parse_node("\"[2001:db8::1]:443\""), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("192.0.2.1:80"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("unknown"), None);
    }
}
