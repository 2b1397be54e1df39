//! Cross-site request forgery defences: a per-session token in every form (or the `X-CSRF-Token`
//! header for HTMX), and a check that the browser says the request came from our own origin.

use subtle::ConstantTimeEq;

/// Compares a submitted token with the session's in constant time.
pub fn csrf_tokens_match(expected: &str, submitted: &str) -> bool {
    !expected.is_empty() && expected.as_bytes().ct_eq(submitted.as_bytes()).into()
}

/// Judges the browser's own account of where a request came from.
///
/// `Sec-Fetch-Site` (sent by every current browser to an https site) must be `same-origin` or
/// `none` (typed or bookmarked). Without it, an `Origin` header must be ours or `null`: a site
/// reached over plain http gets no `Sec-Fetch-Site`, and our own pages' `no-referrer` policy makes
/// the browser send `Origin: null` on their POSTs. A request with no fitting header (an old browser,
/// a script, a page over http) is left to the token, which it cannot have without reading our pages.
pub fn origin_is_allowed(sec_fetch_site: Option<&str>, origin: Option<&str>, our_origin: &str) -> bool {
    if let Some(site) = sec_fetch_site {
        return matches!(site, "same-origin" | "none");
    }
    match origin {
        Some("null") | None => true,
        Some(origin) => origin.trim_end_matches('/') == our_origin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "https://files.example.com";

    #[test]
    fn same_origin_and_user_initiated_requests_pass() {
        assert!(origin_is_allowed(Some("same-origin"), Some(OURS), OURS));
        assert!(origin_is_allowed(Some("none"), None, OURS));
        assert!(origin_is_allowed(None, Some(OURS), OURS));
        assert!(origin_is_allowed(None, None, OURS));
        // Our own no-referrer page over plain http: no Sec-Fetch-Site, and an opaque origin.
        assert!(origin_is_allowed(None, Some("null"), "http://10.0.0.5:8080"));
    }

    #[test]
    fn cross_site_requests_are_refused_whatever_else_they_claim() {
        assert!(!origin_is_allowed(Some("cross-site"), Some(OURS), OURS));
        assert!(!origin_is_allowed(Some("same-site"), None, OURS));
        assert!(!origin_is_allowed(None, Some("https://evil.example"), OURS));
        assert!(!origin_is_allowed(Some("cross-site"), Some("null"), OURS));
        assert!(!origin_is_allowed(None, Some("https://files.example.com.evil.example"), OURS));
    }

    #[test]
    fn tokens_must_match_exactly() {
        assert!(csrf_tokens_match("abc", "abc"));
        assert!(!csrf_tokens_match("abc", "abd"));
        assert!(!csrf_tokens_match("abc", "ab"));
        assert!(!csrf_tokens_match("", ""));
    }
}
