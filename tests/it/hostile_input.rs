//! Hostile input: malformed share tokens (the Big List of Naughty Strings), raw invalid bytes in
//! request lines, broken form and multipart bodies and header-injection attempts. Every such
//! request gets a clear 4xx page that leaks nothing, and changes nothing.

use std::time::Duration;

use rand::{RngExt, SeedableRng, rngs::StdRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    both_backends,
    support::{Browser, Page, TestApp, TestShare, count},
};

const PASSWORD: &str = "lantern orchard seventeen copper";

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

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &d) in chunk.iter().enumerate() {
            acc |= u32::from(d) << (18 - 6 * i);
        }
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// The Big List of Naughty Strings, as raw bytes.
fn naughty_strings() -> Vec<Vec<u8>> {
    let path = std::path::Path::new("/work/shared/data/blns/blns.base64.json");
    let json: Vec<String> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json.iter().map(|s| base64_decode(s)).collect()
}

fn is_lower_hex_64(bytes: &[u8]) -> bool {
    bytes.len() == 64 && bytes.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// A browser on a real share's landing page: it has a session, and the page's CSRF token.
async fn on_landing(app: &TestApp, share: &TestShare) -> (Browser, String) {
    let browser = app.browser();
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let csrf = landing.csrf_token();
    (browser, csrf)
}

/// A code request that certainly sends a mail: once its code has arrived, any mail the requests
/// before it had set off would have arrived too. Returns every mail received by then.
async fn mails_after_a_sure_one(app: &TestApp) -> Vec<crate::support::smtp::ReceivedMail> {
    let share = app.create_share().await;
    let (browser, csrf) = on_landing(app, &share).await;
    let before = app.smtp.messages().len();
    let page = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &csrf), ("email", "recipient@example.test")])
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    app.smtp.wait_for(before + 1, Duration::from_secs(20)).await
}

async fn signed_in_sender(app: &TestApp, email: &str) -> Browser {
    app.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
    app.sign_in(email, PASSWORD).await
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

both_backends! {
    async fn malformed_share_tokens_from_the_naughty_list_are_404_and_change_nothing(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let share = app.create_share().await;
        let (browser, csrf) = on_landing(&app, &share).await;
        let before = snapshot(&app).await;
        let mut tried = 0;
        for naughty in naughty_strings() {
            // A dot segment is resolved away by the client's URL parser; the raw-bytes test sends those.
            if is_lower_hex_64(&naughty) || naughty == b"." || naughty == b".." {
                continue;
            }
            tried += 1;
            let encoded = percent_encode(&naughty);
            let case = format!("{:?}", String::from_utf8_lossy(&naughty));
            let fields = [("csrf_token", csrf.as_str())];
            // An empty token matches no route at all; bytes that are not UTF-8 cannot be a path parameter.
            let (get_landing, post_landing, get_download, post_download): (&[u16], &[u16], &[u16], &[u16]) =
                if naughty.is_empty() {
                    (&[404], &[404], &[405], &[404])
                } else if std::str::from_utf8(&naughty).is_err() {
                    (&[400, 404], &[405], &[405], &[400, 404])
                } else {
                    (&[404], &[405], &[405], &[404])
                };
            let landing = format!("/s/{encoded}");
            let download = format!("/s/{encoded}/download");
            assert_refused(&browser.get(&landing).await, get_landing, &format!("GET /s/ {case}"));
            assert_refused(&browser.post_form(&landing, &fields).await, post_landing, &format!("POST /s/ {case}"));
            assert_refused(&browser.get(&download).await, get_download, &format!("GET download {case}"));
            assert_refused(&browser.post_form(&download, &fields).await, post_download, &format!("POST download {case}"));
        }
        assert!(tried > 600, "only {tried} naughty strings tried");
        assert_eq!(snapshot(&app).await, before);
    }

    async fn raw_invalid_bytes_in_paths_and_queries_get_a_4xx_answer(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let before = snapshot(&app).await;
        let zeros = "0".repeat(64);
        let targets: Vec<Vec<u8>> = vec![
            b"/s/\xff\xfe".to_vec(),
            b"/s/\xc0\xaf".to_vec(),
            b"/s/\xc0\xae\xc0\xae/download".to_vec(),
            b"/s/%c0%af".to_vec(),
            b"/s/%ff%fe/download".to_vec(),
            b"/s/%00".to_vec(),
            b"/s/abc%00def/download".to_vec(),
            b"/s/\xed\xa0\x80".to_vec(),
            b"/s/%ed%a0%80".to_vec(),
            b"/s/%2e%2e".to_vec(),
            b"/s/%2e%2e/download".to_vec(),
            b"/s/../download".to_vec(),
            [b"/s/".as_slice(), zeros.as_bytes(), b"?step=\xff\xfe"].concat(),
            [b"/s/".as_slice(), zeros.as_bytes(), b"?step=%ff%00%c0%af"].concat(),
            b"/s/zzz?step=%00&step=\xc0\xaf".to_vec(),
            b"/static/\xff/\xc0\xae".to_vec(),
            b"/static/%ff/%c0%ae%c0%ae%2f%2e%2e%2fetc%2fpasswd".to_vec(),
            b"/shares/%ff".to_vec(),
            b"/invite/%ff%00".to_vec(),
            b"/setup/\xff".to_vec(),
            b"/s/abc\x00def".to_vec(),
            b"/s/x?step=\x00".to_vec(),
        ];
        for target in &targets {
            let mut request = b"GET ".to_vec();
            request.extend_from_slice(target);
            request.extend_from_slice(b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            let answer = raw_exchange(&app, &request).await;
            let case = format!("{:?}", String::from_utf8_lossy(target));
            assert!(!answer.is_empty(), "{case}: the connection was dropped without an answer");
            let (status, content_type, body) = parse_answer(&answer);
            let raw_bytes = target.iter().any(|&b| !(0x20..0x80).contains(&b));
            if raw_bytes {
                // Not a valid request line: the HTTP parser answers a bare 400 before the app runs.
                assert_eq!(status, 400, "{case}: {}", String::from_utf8_lossy(&answer));
                continue;
            }
            assert!(matches!(status, 400 | 404 | 405), "{case}: status {status}: {}", String::from_utf8_lossy(&answer));
            assert_friendly(&body, content_type.as_deref(), &case);
        }
        assert_eq!(snapshot(&app).await, before);
    }

    async fn broken_form_bodies_are_refused_before_any_change(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
        let big = "a".repeat(100 * 1024);
        for route in ["email", "code", "login"] {
            let share = app.create_share().await;
            let (browser, csrf) = if route == "login" {
                let browser = app.browser();
                let csrf = browser.get("/login").await.csrf_token();
                (browser, csrf)
            } else {
                on_landing(&app, &share).await
            };
            let path = if route == "login" { "/login".to_owned() } else { format!("/s/{}/{route}", share.token) };
            let before = snapshot(&app).await;
            let prefix = format!("csrf_token={csrf}&");
            let cases: Vec<(&str, Vec<u8>, &[u16])> = vec![
                ("100 KiB email", format!("{prefix}email={big}&password=x").into_bytes(), &[413]),
                ("100 KiB code", format!("{prefix}code={big}").into_bytes(), &[413]),
                ("100 KiB password", format!("{prefix}email=s%40example.test&password={big}").into_bytes(), &[413]),
                ("100 KiB unknown field", format!("{prefix}x={big}").into_bytes(), &[413]),
                ("invalid UTF-8 CSRF token", [b"csrf_token=\xff\xfe%ff".as_slice(), b"&email=a"].concat(), &[403]),
            ];
            for (name, body, allowed) in cases {
                let page = post_raw(&browser, &path, FORM, body).await;
                assert_refused(&page, allowed, &format!("{route}: {name}"));
            }
            assert_eq!(snapshot(&app).await, before, "{route}");
        }
        let mails = mails_after_a_sure_one(&app).await;
        assert_eq!(mails.len(), 1, "mail was sent besides the sure one: {:?}", mails.iter().map(|m| m.to.clone()).collect::<Vec<_>>());
    }

    async fn header_injection_in_addresses_answers_like_a_wrong_address_and_sends_nothing(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
        let injections = ["a@b.c\r\nBcc: x@y.z", "a@b.c%0d%0aBcc:x@y.z", "recipient@example.test\r\nBcc: x@y.z"];
        // A share per address: the per-share limit allows only a few addresses in a row.
        let mut visits = Vec::new();
        for _ in 0..=injections.len() {
            let share = app.create_share().await;
            let (browser, csrf) = on_landing(&app, &share).await;
            visits.push((format!("/s/{}/email", share.token), browser, csrf));
        }
        let before = snapshot(&app).await;

        let (path, browser, csrf) = &visits[0];
        let wrong = browser.post_form(path, &[("csrf_token", csrf), ("email", "nobody@example.test")]).await;
        assert_eq!(wrong.status, 200, "{}", wrong.body);
        let wrong_step = wrong.attr("#step", "data-step");
        for (injection, (path, browser, csrf)) in injections.into_iter().zip(&visits[1..]) {
            let page = browser.post_form(path, &[("csrf_token", csrf), ("email", injection)]).await;
            assert_eq!(page.status, wrong.status, "{injection:?}: {}", page.body);
            assert_eq!(page.attr("#step", "data-step"), wrong_step, "{injection:?}");
            assert_eq!(page.texts("h1"), wrong.texts("h1"), "{injection:?}");
            assert_eq!(page.texts("[role=alert]"), wrong.texts("[role=alert]"), "{injection:?}");
            for marker in LEAK_MARKERS {
                assert!(!page.body.contains(marker), "{injection:?}: leaks {marker:?}");
            }
        }

        let login = app.browser();
        let csrf = login.get("/login").await.csrf_token();
        let wrong =
            login.post_form("/login", &[("csrf_token", &csrf), ("email", "nobody@example.test"), ("password", PASSWORD)]).await;
        for injection in ["a@b.c\r\nBcc: x@y.z", "a@b.c%0d%0aBcc:x@y.z", "s@example.test\r\nBcc: x@y.z"] {
            let page = login.post_form("/login", &[("csrf_token", &csrf), ("email", injection), ("password", PASSWORD)]).await;
            assert_eq!(page.status, wrong.status, "{injection:?}: {}", page.body);
            assert_eq!(page.texts("h1"), wrong.texts("h1"), "{injection:?}");
            assert_eq!(page.texts("[role=alert]"), wrong.texts("[role=alert]"), "{injection:?}");
            assert!(login.get("/shares").await.status == 303, "{injection:?} signed in");
        }

        assert_eq!(snapshot(&app).await, before);
        let mails = mails_after_a_sure_one(&app).await;
        assert_eq!(mails.len(), 1, "mail was sent besides the sure one: {:?}", mails.iter().map(|m| m.to.clone()).collect::<Vec<_>>());
    }

    async fn malformed_multipart_uploads_are_4xx_and_store_nothing(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let browser = signed_in_sender(&app, "s@example.test").await;
        let csrf = browser.get("/shares/new").await.csrf_token();
        let b = "hostileBoundary7MA4YWxkTrZu0gW";
        let multipart = format!("multipart/form-data; boundary={b}");
        let csrf_part = part(b, "csrf_token", None, csrf.as_bytes());
        let fields = [
            csrf_part.clone(),
            part(b, "recipient", None, b"c@example.test"),
            part(b, "expires_in", None, b"1d"),
        ]
        .concat();
        let file_a = part(b, "file", Some("a.txt"), b"first file");
        let complete = [fields.clone(), file_a.clone(), closing(b)].concat();
        let cases: Vec<(&str, &str, Vec<u8>, &[u16])> = vec![
            ("no boundary", "multipart/form-data", complete.clone(), &[400]),
            ("empty boundary", "multipart/form-data; boundary=", complete.clone(), &[400]),
            ("boundary not in the body", &multipart, b"just some bytes, no parts at all".to_vec(), &[400]),
            (
                "truncated inside a field",
                &multipart,
                [csrf_part.clone(), format!("--{b}\r\nContent-Disposition: form-data; name=\"recipient\"\r\n\r\nc@exa").into_bytes()]
                    .concat(),
                &[400],
            ),
            ("truncated inside the part headers", &multipart, [csrf_part.clone(), format!("--{b}\r\nContent-Disp").into_bytes()].concat(), &[400]),
            ("file before the CSRF token", &multipart, [file_a.clone(), csrf_part.clone(), closing(b)].concat(), &[403]),
            ("recipient before the CSRF token", &multipart, [part(b, "recipient", None, b"c@example.test"), file_a.clone(), closing(b)].concat(), &[403]),
            (
                "20 KiB field",
                &multipart,
                [csrf_part.clone(), part(b, "recipient", None, &[b'a'; 20 * 1024]), file_a.clone(), closing(b)].concat(),
                &[413],
            ),
            ("20 KiB CSRF field", &multipart, [part(b, "csrf_token", None, &[b'0'; 20 * 1024]), file_a.clone(), closing(b)].concat(), &[413]),
            ("invalid UTF-8 field", &multipart, [csrf_part.clone(), part(b, "recipient", None, b"\xff\xfe@\xc0\xaf"), file_a.clone(), closing(b)].concat(), &[400]),
            (
                "truncated inside the file",
                &multipart,
                [fields.clone(), format!("--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nthe file is cu").into_bytes()].concat(),
                &[400],
            ),
            (
                "a second file after the first",
                &multipart,
                [fields.clone(), file_a.clone(), part(b, "file", Some("b.txt"), b"second file"), closing(b)].concat(),
                &[400],
            ),
        ];
        let before = snapshot(&app).await;
        for (name, content_type, body, allowed) in cases {
            let page = post_raw(&browser, "/shares/new", content_type, body).await;
            assert_refused(&page, allowed, name);
            assert_eq!(snapshot(&app).await, before, "{name} changed something");
        }
        let mails = mails_after_a_sure_one(&app).await;
        assert_eq!(mails.len(), 1, "mail was sent besides the sure one");
    }

    async fn the_token_parser_accepts_only_the_issued_token(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let share = app.create_share().await;
        let before = snapshot(&app).await;
        let real = share.token.as_str();
        assert!(watasu::session::is_token_shaped(real));
        assert!(app.state.shares.open(real).await.is_ok());

        let mut rng = StdRng::seed_from_u64(0x5eed_7a7a);
        let hex = b"0123456789abcdefABCDEF";
        let mut candidates: Vec<String> = Vec::new();
        for i in 0..3000 {
            let len = rng.random_range(0..=200usize);
            let s: String = match i % 4 {
                0 => (0..len).map(|_| rng.random_range(0x20u8..0x7f) as char).collect(),
                1 => (0..len).map(|_| rng.random::<char>()).collect(),
                // Near-tokens: mostly 64 characters of (mostly lower-case) hex.
                2 => {
                    let len = if rng.random_bool(0.7) { 64 } else { rng.random_range(60..=68) };
                    let alphabet = if rng.random_bool(0.8) { &hex[..16] } else { &hex[..] };
                    (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())] as char).collect()
                }
                // Mutations of the real token.
                _ => {
                    let mut chars: Vec<char> = real.chars().collect();
                    let at = rng.random_range(0..chars.len());
                    match rng.random_range(0..5) {
                        0 => chars[at] = if chars[at] == '0' { '1' } else { '0' },
                        1 => chars[at] = chars[at].to_ascii_uppercase(),
                        2 => chars.insert(at, rng.random::<char>()),
                        3 => {
                            chars.remove(at);
                        }
                        _ => chars.push([' ', '\n', '\0', '%', '/', '\u{200b}'][rng.random_range(0..6)]),
                    }
                    chars.into_iter().collect()
                }
            };
            candidates.push(s);
        }
        candidates.extend([real.to_uppercase(), format!(" {real}"), format!("{real} "), real[..63].to_owned(), String::new()]);
        let mut shaped = 0;
        for s in &candidates {
            let expected_shape = is_lower_hex_64(s.as_bytes());
            assert_eq!(watasu::session::is_token_shaped(s), expected_shape, "{s:?}");
            shaped += usize::from(expected_shape);
            let opened = app.state.shares.open(s).await;
            assert_eq!(opened.is_ok(), s == real, "{s:?} opened a share");
        }
        assert!(shaped > 500, "too few token-shaped candidates ({shaped}) reached the database lookup");
        assert_eq!(snapshot(&app).await, before);
    }
}
