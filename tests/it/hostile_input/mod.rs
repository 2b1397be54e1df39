//! Hostile input: malformed share tokens (the Big List of Naughty Strings), raw invalid bytes in
//! request lines, broken form and multipart bodies and header-injection attempts. Every such
//! request gets a clear 4xx page that leaks nothing, and changes nothing.

mod bodies;
mod tokens_and_paths;

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    both_backends,
    support::{Browser, Page, TestApp, count},
};

use crate::support::PASSWORD;

/// Text that must never reach a visitor: internals of the database layer, panics, SQL, Rust types.
pub(crate) const LEAK_MARKERS: [&str; 16] = [
    "sqlx",
    "panicked",
    "SELECT ",
    "INSERT INTO",
    "UPDATE ",
    "DELETE FROM",
    "syntax error",
    "AppError",
    "ShareError",
    "poem::",
    "std::",
    "anyhow",
    "called `",
    "Option<",
    "String",
    "RUST_BACKTRACE",
];

/// Everything a refused request must leave as it was.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) shares: i64,
    pub(crate) signed_in_sessions: i64,
    /// Challenges whose code went out: an address that is not the recipient's makes a withheld one.
    pub(crate) mailed_challenges: i64,
    pub(crate) download_grants: i64,
    pub(crate) events_besides_opened: i64,
    pub(crate) users: i64,
    pub(crate) files: Vec<String>,
}

pub(crate) async fn snapshot(app: &TestApp) -> Snapshot {
    let db = app.db();
    Snapshot {
        shares: count(db, "SELECT count(*) FROM shares WHERE id > $1", 0).await,
        signed_in_sessions: count(db, "SELECT count(*) FROM sessions WHERE user_id > $1", 0).await,
        mailed_challenges: count(db, "SELECT count(*) FROM otp_challenges WHERE mailed AND id > $1", 0).await,
        download_grants: count(db, "SELECT count(*) FROM download_grants WHERE share_id > $1", 0).await,
        events_besides_opened: count(db, "SELECT count(*) FROM share_events WHERE kind <> 'opened' AND id > $1", 0)
            .await,
        users: count(db, "SELECT count(*) FROM users WHERE id > $1", 0).await,
        files: stored_files(app),
    }
}

fn stored_files(app: &TestApp) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(app.data_dir.path().join("files"))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A clear refusal: one of `allowed`, an HTML page with a heading, nothing internal in it.
fn assert_refused(page: &Page, allowed: &[u16], case: &str) {
    assert!(
        allowed.contains(&page.status.as_u16()),
        "{case}: status {} not in {allowed:?}: {}",
        page.status,
        page.body
    );
    assert_friendly(&page.body, page.header("content-type"), case);
}

pub(crate) fn assert_friendly(body: &str, content_type: Option<&str>, case: &str) {
    assert!(content_type.is_some_and(|ct| ct.starts_with("text/html")), "{case}: not an HTML page ({content_type:?})");
    assert!(body.contains("<h1"), "{case}: the page has no heading: {body}");
    // A marker the hostile input itself carries may come back in a (percent-encoded) link.
    for marker in LEAK_MARKERS.iter().filter(|m| !case.contains(**m)) {
        assert!(!body.contains(marker), "{case}: the page leaks {marker:?}: {body}");
    }
}

/// Every byte that is not an ASCII letter or digit as %XX.
pub(crate) fn percent_encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The Big List of Naughty Strings, as raw bytes.
fn naughty_strings() -> Vec<Vec<u8>> {
    let path = std::path::Path::new("/work/shared/data/blns/blns.base64.json");
    let json: Vec<String> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json.iter().map(|s| STANDARD.decode(s).expect("the list is base64")).collect()
}

fn is_lower_hex_64(bytes: &[u8]) -> bool {
    bytes.len() == 64 && bytes.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// A code request that certainly sends a mail: once its code has arrived, any mail the requests
/// before it had set off would have arrived too. Returns every mail received by then.
async fn mails_after_a_sure_one(app: &TestApp) -> Vec<crate::support::smtp::ReceivedMail> {
    let share = app.create_share().await;
    let (browser, csrf) = app.landed_browser(&share.token).await;
    let before = app.smtp.messages().len();
    let page = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &csrf), ("email", "recipient@example.test")])
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    app.smtp.wait_for(before + 1, Duration::from_secs(20)).await
}

/// Posts raw bytes with a content type, same-origin, as a browser page would.
async fn post_raw(browser: &Browser, path: &str, content_type: &str, body: Vec<u8>) -> Page {
    let response = browser
        .client
        .post(browser.url(path))
        .header("Sec-Fetch-Site", "same-origin")
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    Page::read(response).await
}

const FORM: &str = "application/x-www-form-urlencoded";

/// One request line and headers sent byte for byte; the whole answer, however it ends.
async fn raw_exchange(app: &TestApp, request: &[u8]) -> Vec<u8> {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the server hung on {:?}", String::from_utf8_lossy(request));
    answer
}

/// (status, content type, body) of a raw HTTP/1.1 answer, de-chunked if needed.
fn parse_answer(answer: &[u8]) -> (u16, Option<String>, String) {
    let text = String::from_utf8_lossy(answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    };
    let body = if header("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || tail.len() < size {
                break;
            }
            out.push_str(&tail[..size]);
            rest = tail[size..].trim_start_matches("\r\n");
        }
        out
    } else {
        body.to_owned()
    };
    (status, header("content-type"), body)
}

/// A multipart part, framed with `boundary`.
fn part(boundary: &str, name: &str, file_name: Option<&str>, content: &[u8]) -> Vec<u8> {
    let disposition = match file_name {
        Some(file) => format!("form-data; name=\"{name}\"; filename=\"{file}\""),
        None => format!("form-data; name=\"{name}\""),
    };
    let mut out = format!("--{boundary}\r\nContent-Disposition: {disposition}\r\n").into_bytes();
    if file_name.is_some() {
        out.extend_from_slice(b"Content-Type: application/octet-stream\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(content);
    out.extend_from_slice(b"\r\n");
    out
}

fn closing(boundary: &str) -> Vec<u8> {
    format!("--{boundary}--\r\n").into_bytes()
}
