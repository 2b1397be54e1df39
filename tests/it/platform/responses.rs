//! Safe responses, language, static files, health, proxies, the access log and shutdown.

use super::*;

#[tokio::test]
async fn security_headers_are_on_pages_and_error_pages() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = app.browser();
    assert_safe_headers(&browser.get("/").await, "start page");
    assert_safe_headers(&browser.get("/no/such/page").await, "404 page");
    assert_safe_headers(&browser.post_form("/logout", &[]).await, "403 page");
    assert!(browser.get("/").await.header("strict-transport-security").is_none(), "HSTS over plain http");
}

#[tokio::test]
async fn behind_https_pages_get_hsts_and_cookies_get_secure_and_the_host_prefix() {
    let app =
        TestApp::spawn_with(Backend::Sqlite, |s| s.base_url = Some("https://files.example.test/".parse().unwrap()))
            .await;
    let page = app.browser().get("/").await;
    assert_eq!(page.header("strict-transport-security"), Some("max-age=31536000"));

    let created = app.state.sessions.create().await.unwrap();
    let browser = app.browser();
    browser.set_cookie("__Host-watasu", created.cookie_value.expose());
    let token = created.session.csrf_secret;
    let page = browser
        .post_form_with("/logout", &[("csrf_token", token.as_str())], &[("Origin", "https://files.example.test")])
        .await;
    assert_eq!(page.status, 303, "the https cookie name was not recognised");
    let cookie = page.header("set-cookie").unwrap();
    assert!(cookie.starts_with("__Host-watasu="), "{cookie}");
    assert!(cookie.contains("Secure") && cookie.contains("HttpOnly") && cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Domain"), "{cookie}");

    let switched = app.browser().get("/login?lang=en").await;
    let cookies: Vec<&str> = switched.headers.get_all("set-cookie").iter().map(|v| v.to_str().unwrap()).collect();
    for name in ["__Host-lang=en", "__Host-watasu-form="] {
        let cookie = cookies.iter().find(|c| c.starts_with(name)).unwrap_or_else(|| panic!("no {name}: {cookies:?}"));
        assert!(cookie.contains("Secure") && cookie.contains("Path=/") && !cookie.contains("Domain"), "{cookie}");
    }
}

#[tokio::test]
async fn an_unknown_path_gets_a_404_page_in_the_language_asked_for() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = app.browser();
    let english = browser.get_with("/nowhere", &[("Accept-Language", "en-GB,en;q=0.9")]).await;
    assert_eq!(english.status, 404);
    assert_eq!(english.attr("html", "lang").as_deref(), Some("en"));
    assert_eq!(english.texts("h1"), ["This page is not available"]);

    let japanese = browser.get_with("/nowhere", &[("Accept-Language", "ja-JP")]).await;
    assert_eq!(japanese.attr("html", "lang").as_deref(), Some("ja"));
    assert_eq!(japanese.texts("h1"), ["このページは利用できません"]);
}

#[tokio::test]
async fn the_language_switch_is_remembered() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = app.browser();
    let switched = browser.get_with("/?lang=en", &[("Accept-Language", "ja")]).await;
    assert_eq!(switched.attr("html", "lang").as_deref(), Some("en"));
    let later = browser.get_with("/", &[("Accept-Language", "ja")]).await;
    assert_eq!(later.attr("html", "lang").as_deref(), Some("en"), "the choice was forgotten");
    assert_eq!(later.attr(".lang-switch a", "href").as_deref(), Some("/?lang=ja"));
}

#[tokio::test]
async fn static_files_have_a_versioned_url_and_a_long_cache() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = app.browser();
    let page = browser.get("/").await;
    for selector in ["link[rel=stylesheet]", "script[src*=htmx]"] {
        let attr = if selector.starts_with("link") { "href" } else { "src" };
        let url = page.attr(selector, attr).unwrap();
        let asset = browser.get(&url).await;
        assert_eq!(asset.status, 200, "{url}");
        assert_eq!(asset.header("cache-control"), Some("public, max-age=31536000, immutable"), "{url}");
    }
    let head =
        browser.client.head(browser.url(&page.attr("link[rel=stylesheet]", "href").unwrap())).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(browser.get("/static/0/none.js").await.status, 404);
}

#[tokio::test]
async fn health_answers_without_a_session() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let page = app.browser().get("/healthz").await;
    assert_eq!((page.status.as_u16(), page.body.as_str()), (200, "ok\n"));
}

#[test]
fn the_share_token_never_appears_in_the_access_log() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let token = watasu::secret::random_token();
    let url = format!("{}/s/{}?lang=en", server.base(), token.expose());
    let status = reqwest::blocking_get(&url);
    assert_eq!(status, 404);
    server.wait_for_log("/s/[redacted]", Duration::from_secs(5));
    assert!(!server.log().contains(token.expose()), "{}", server.log());
}

#[test]
fn x_forwarded_for_is_believed_only_from_a_trusted_proxy() {
    let claim = "203.0.113.77";
    let untrusted_dir = tempfile::tempdir().unwrap();
    let untrusted = Server::start(untrusted_dir.path(), &[]);
    reqwest::blocking_get_with(&format!("{}/healthz", untrusted.base()), ("X-Forwarded-For", claim));
    untrusted.wait_for_log("path=\"/healthz\"", Duration::from_secs(5));
    assert!(untrusted.log().contains("client=\"127.0.0.1\""), "{}", untrusted.log());
    assert!(!untrusted.log().contains(claim));

    let trusted_dir = tempfile::tempdir().unwrap();
    let trusted = Server::start(trusted_dir.path(), &["--trusted-proxies", "127.0.0.1/32"]);
    reqwest::blocking_get_with(&format!("{}/healthz", trusted.base()), ("X-Forwarded-For", claim));
    trusted.wait_for_log("path=\"/healthz\"", Duration::from_secs(5));
    assert!(trusted.log().contains(&format!("client=\"{claim}\"")), "{}", trusted.log());
}

#[test]
fn sigterm_lets_a_request_in_flight_finish_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &["--shutdown-grace", "20s"]);
    let body = "csrf_token=nope&filler=".to_owned() + &"x".repeat(4000);
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    write!(
        stream,
        "POST /logout HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    )
    .unwrap();
    stream.write_all(&body.as_bytes()[..100]).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    server.signal("TERM");
    server.wait_for_log("shutting down", Duration::from_secs(5));
    // The slow client keeps sending after the signal; its request must still be answered.
    std::thread::sleep(Duration::from_millis(700));
    assert!(TcpStream::connect(&server.addr).is_err(), "still accepting new connections");
    stream.write_all(&body.as_bytes()[100..]).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert_eq!(server.wait_exit(Duration::from_secs(20)), Some(0));
}

/// Whether the process catches SIGTERM (bit 15 of `SigCgt` in /proc/PID/status).
fn catches_sigterm(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(mask, 16).unwrap_or(0) & (1 << 14) != 0
}

#[test]
fn sigterm_while_starting_up_stops_cleanly_once_started() {
    let dir = tempfile::tempdir().unwrap();
    // A standard output already full holds the start-up at its first line (the setup link).
    let (mut out, mut full) = std::io::pipe().unwrap();
    full.write_all(&[b'.'; 65536]).unwrap();
    let addr = crate::support::process::free_local_addr();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["serve", "--listen", &addr, "--data-dir", dir.path().to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(full)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !catches_sigterm(child.id()) {
        assert!(started.elapsed() < Duration::from_secs(10), "no SIGTERM handler while starting up");
        std::thread::sleep(Duration::from_millis(20));
    }

    let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let mut printed = String::new();
    out.read_to_string(&mut printed).unwrap();
    let code = child.wait().unwrap().code();

    assert_eq!(code, Some(0), "ended by the signal instead of stopping");
    assert!(printed.contains("/setup/"), "the start-up did not go on: {printed:.200}");
}
