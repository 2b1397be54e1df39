//! The real-browser harness against the real app: a headless Chromium loads the start page, runs
//! htmx under the CSP, switches language, renders on a phone, works without JavaScript, and saves
//! downloads where the test can find them.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    time::Duration,
};

use watasu::i18n::Lang;

use crate::support::{
    Backend, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_start_page_runs_htmx_under_the_csp_and_switches_to_english() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;

    browser.goto(&format!("{}/", app.base)).await;
    assert_eq!(
        browser.execute("return [window.innerWidth, window.innerHeight];").await,
        serde_json::json!([1280, 900])
    );
    assert_eq!(browser.attr("html", "lang").await.as_deref(), Some("ja"));
    assert_eq!(browser.text("h1").await, Lang::Ja.text().chrome.home_title);

    // htmx and app.js came from our origin and ran; nothing inline that the CSP would block.
    assert_eq!(browser.execute("return typeof htmx;").await, "object");
    assert_eq!(browser.execute("return document.querySelectorAll('script:not([src])').length;").await, 0);
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    // The check above can see a violation: an inline script is refused and reported.
    browser
        .execute(
            "const s = document.createElement('script'); s.textContent = 'window.x = 1;'; \
             document.head.appendChild(s); return null;",
        )
        .await;
    browser
        .wait_until("the refused inline script in the log", DEFAULT_WAIT, async |b| {
            !b.csp_violations().await.is_empty()
        })
        .await;
    assert_eq!(browser.execute("return window.x === undefined;").await, true);

    let shot = browser.screenshot("smoke-desktop").await;
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000, "{shot:?}");
    browser.screenshot_full_page("smoke-desktop-full").await;

    // The visible switch is a plain link: a full page load in English, remembered.
    browser.mark_document().await;
    browser.click(".lang-switch a[hreflang=en]").await;
    browser
        .wait_until("<html lang=en>", DEFAULT_WAIT, async |b| b.attr("html", "lang").await.as_deref() == Some("en"))
        .await;
    assert_eq!(browser.current_path().await, "/?lang=en");
    assert_eq!(browser.text("h1").await, Lang::En.text().chrome.home_title);
    assert!(!browser.document_is_marked().await, "the switch did not load a new page");
    assert_eq!(browser.navigation_type().await, "navigate");
    assert_eq!(browser.text(".lang-switch .lang-current").await, Lang::En.text().chrome.lang_name);
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.goto(&format!("{}/", app.base)).await;
    assert_eq!(browser.attr("html", "lang").await.as_deref(), Some("en"));

    browser.close().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_start_page_fits_a_phone() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = BrowserSession::start(BrowserOptions::phone()).await;

    browser.goto(&format!("{}/", app.base)).await;
    assert_eq!(
        browser.execute("return [window.innerWidth, window.innerHeight, window.devicePixelRatio];").await,
        serde_json::json!([390, 844, 2])
    );
    assert_eq!(browser.execute("return matchMedia('(pointer: coarse)').matches;").await, true);
    // Nothing sticks out sideways.
    assert_eq!(browser.execute("return document.documentElement.scrollWidth <= window.innerWidth;").await, true);
    assert_eq!(browser.text("h1").await, Lang::Ja.text().chrome.home_title);
    browser.screenshot("smoke-phone").await;
    browser.screenshot_full_page("smoke-phone-full").await;

    browser.close().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_start_page_works_without_javascript() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = BrowserSession::start(BrowserOptions::desktop().without_javascript()).await;

    browser.goto(&format!("{}/", app.base)).await;
    assert_eq!(browser.text("h1").await, Lang::Ja.text().chrome.home_title);
    // The page's scripts really did not run (WebDriver's own scripts still do).
    assert_eq!(browser.execute("return typeof htmx;").await, "undefined");
    assert!(!browser.exists("noscript").await, "the page needs no <noscript> fallback");
    // Plain links work as they are.
    browser.click(".lang-switch a[hreflang=en]").await;
    browser
        .wait_until("<html lang=en>", DEFAULT_WAIT, async |b| b.attr("html", "lang").await.as_deref() == Some("en"))
        .await;
    assert_eq!(browser.text("h1").await, Lang::En.text().chrome.home_title);
    browser.screenshot("smoke-nojs").await;

    browser.close().await;
    app.stop().await;
}

/// The harness's download handling, against a tiny server that answers with an attachment.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_download_lands_finished_in_the_download_directory() {
    let server = AttachmentServer::start("hello.txt", b"hello from watasu\n");
    let downloads = tempfile::tempdir().unwrap();
    let browser = BrowserSession::start(BrowserOptions::desktop().downloads_to(downloads.path())).await;

    browser.goto(&server.url("/")).await;
    browser.click("a#get").await;
    let file = browser.wait_for_download(downloads.path(), Duration::from_secs(20)).await;
    assert_eq!(file.file_name().unwrap(), "hello.txt");
    assert_eq!(std::fs::read(&file).unwrap(), b"hello from watasu\n");

    browser.close().await;
}

/// Serves a page linking to `/file`, and `/file` as an attachment, one request at a time.
struct AttachmentServer {
    port: u16,
}

impl AttachmentServer {
    fn start(name: &'static str, body: &'static [u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request_line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // Read the headers to the blank line.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let (head, content): (String, &[u8]) = if request_line.starts_with("GET /file") {
                    (
                        format!(
                            "Content-Type: application/octet-stream\r\n\
                             Content-Disposition: attachment; filename=\"{name}\"\r\n"
                        ),
                        body,
                    )
                } else {
                    (
                        "Content-Type: text/html; charset=utf-8\r\n".to_owned(),
                        b"<!doctype html><title>dl</title><a id=get href=/file>get</a>",
                    )
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\n{head}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    content.len()
                );
                let _ = stream.write_all(content);
            }
        });
        Self { port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// The axe-core check every page gets can fail, with JavaScript on and off: an image without a
/// text alternative put into the page is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_accessibility_check_sees_a_violation_with_and_without_javascript() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    for options in [BrowserOptions::phone(), BrowserOptions::desktop().without_javascript()] {
        let browser = BrowserSession::start(options).await;
        browser.goto(&format!("{}/login", app.base)).await;
        assert_eq!(browser.axe_violations().await, serde_json::json!([]));
        browser
            .execute("const img = document.createElement('img'); document.querySelector('main').appendChild(img); return null;")
            .await;
        let violations = browser.axe_violations().await;
        let rules: Vec<&str> = violations.as_array().unwrap().iter().filter_map(|v| v["rule"].as_str()).collect();
        assert_eq!(rules, ["image-alt"], "{violations}");
        browser.close_without_check().await;
    }
    app.stop().await;
}
