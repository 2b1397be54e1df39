//! The platform: configuration, migrations, sessions, CSRF, safe responses, language, health,
//! proxies, shutdown and body caps.

mod responses;
mod sessions;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use crate::support::clock;
use crate::{
    both_backends,
    support::{
        Backend, Browser, TestApp, count,
        pg::PgCluster,
        process::{Server, run_watasu},
    },
};
use watasu::session::Sessions;

fn sessions(app: &TestApp) -> Sessions {
    app.state.sessions.clone()
}

/// A browser holding a live session, and that session's CSRF token.
async fn browser_with_session(app: &TestApp) -> (Browser, String, i64) {
    let created = sessions(app).create().await.unwrap();
    let browser = app.browser();
    browser.set_cookie("watasu_session", created.cookie_value.expose());
    (browser, created.session.csrf_secret, created.session.id)
}

async fn session_exists(app: &TestApp, id: i64) -> bool {
    count(app.db(), "SELECT count(*) FROM sessions WHERE id = $1", id).await == 1
}

const CSP_PARTS: [&str; 6] = [
    "script-src 'self'",
    "style-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "default-src 'none'",
];

fn assert_safe_headers(page: &crate::support::Page, what: &str) {
    let csp = page.header("content-security-policy").unwrap_or_else(|| panic!("{what}: no CSP"));
    for part in CSP_PARTS {
        assert!(csp.contains(part), "{what}: CSP lacks {part}: {csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{what}: {csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"), "{what}");
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"), "{what}");
    assert_eq!(page.header("cache-control"), Some("no-store"), "{what}");
}

/// Tiny blocking HTTP helpers for the process tests (no async runtime there).
mod reqwest {
    use std::io::{Read, Write};

    pub fn blocking_get(url: &str) -> u16 {
        blocking_get_with(url, ("X-None", "0"))
    }

    pub fn blocking_get_with(url: &str, header: (&str, &str)) -> u16 {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = std::net::TcpStream::connect(host).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\n{}: {}\r\nConnection: close\r\n\r\n",
            header.0, header.1
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response[9..12].parse().unwrap()
    }
}
