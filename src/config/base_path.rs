//! The path the app is served under, taken from the base URL's path: `https://example.com/files/`
//! gives `/files`, a base URL without a path gives the empty path (served at the root).

use std::fmt;

use url::Url;

/// A path prefix like `/files` (no trailing slash), or empty. Every URL the app emits starts with
/// it, and every route lives below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BasePath(String);

impl BasePath {
    /// The base URL's path, normalised without a trailing slash. Refused: a query or fragment
    /// (they cannot prefix a path), empty segments, and characters outside a plain path segment
    /// (letters, digits, `-._~`), which the router would read as patterns.
    pub fn from_url(url: &Url) -> Result<Self, String> {
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!("'{url}' must not have a query or fragment"));
        }
        let path = url.path().trim_end_matches('/');
        let plain = |segment: &str| {
            !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        };
        if !path.is_empty() && !path.split('/').skip(1).all(plain) {
            return Err(format!(
                "'{url}' has a path other than plain segments of letters, digits, '-', '.', '_' and '~' \
                 (like https://example.com/files)"
            ));
        }
        Ok(Self(path.to_owned()))
    }

    /// The prefix, like `/files`, or `""` at the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when the app is served at the root of its host.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The path cookies are scoped to: the prefix, or `/` at the root.
    pub fn cookie_path(&self) -> &str {
        if self.is_root() { "/" } else { &self.0 }
    }

    /// An app-relative path (`/shares`) as the browser must ask for it (`/files/shares`).
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

impl fmt::Display for BasePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::BasePath;

    fn parse(text: &str) -> Result<BasePath, String> {
        BasePath::from_url(&Url::parse(text).unwrap())
    }

    #[test]
    fn the_base_path_is_the_url_path_without_its_trailing_slash() {
        for (url, expected) in [
            ("https://example.com", ""),
            ("https://example.com/", ""),
            ("https://example.com/files", "/files"),
            ("https://example.com/files/", "/files"),
            ("https://example.com/files//", "/files"),
            ("http://127.0.0.1:8080/a/b.c-d_e~f/", "/a/b.c-d_e~f"),
            ("https://example.com/files/../apps/x", "/apps/x"),
        ] {
            assert_eq!(parse(url).unwrap().as_str(), expected, "{url}");
        }
    }

    #[test]
    fn cookies_and_links_take_the_prefix_and_the_root_stays_unchanged() {
        let files = parse("https://example.com/files/").unwrap();
        assert_eq!(files.cookie_path(), "/files");
        assert_eq!(files.join("/shares"), "/files/shares");
        let root = parse("https://example.com").unwrap();
        assert!(root.is_root());
        assert_eq!(root.cookie_path(), "/");
        assert_eq!(root.join("/shares"), "/shares");
    }

    #[test]
    fn a_query_a_fragment_or_a_pattern_like_path_is_refused() {
        for url in [
            "https://example.com/files?x=1",
            "https://example.com/files#top",
            "https://example.com/a//b",
            "https://example.com/:id",
            "https://example.com/fi*les",
            "https://example.com/f%C3%A9",
        ] {
            let error = parse(url).unwrap_err();
            assert!(!error.contains('\n'), "{error}");
        }
    }
}
