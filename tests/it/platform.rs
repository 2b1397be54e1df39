//! The platform: configuration, migrations, sessions, CSRF, safe responses, language, health,
//! proxies, shutdown and body caps.

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

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

#[test]
fn an_invalid_setting_stops_start_up_with_one_line_naming_it_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 7] = [
        (&["serve", "--data-dir", data, "--gc-interval", "5x"], &[], "WATASU_GC_INTERVAL"),
        (&["serve", "--data-dir", data], &[("WATASU_DELIVERY_GRACE", "soon")], "WATASU_DELIVERY_GRACE"),
        (&["serve", "--data-dir", data, "--share-ttl", "30s"], &[], "WATASU_SHARE_TTL"),
        (&["serve", "--data-dir", data, "--base-url", "ftp://example.com"], &[], "WATASU_BASE_URL"),
        (&["serve", "--data-dir", data, "--listen", "nowhere"], &[], "WATASU_LISTEN"),
        (
            &["migrate", "--data-dir", data, "--database-url", "postgres://u:p@db.example.com/w?sslmode=require"],
            &[],
            "WATASU_DATABASE_URL",
        ),
        (&["serve", "--data-dir", data], &[("WATASU_SMTP_URL", "smtp://u:p@smtp.example.com:587")], "WATASU_SMTP_URL"),
    ];
    for (args, envs, setting) in cases {
        let (code, stdout, stderr) = run_watasu(args, envs);
        assert_eq!(code, 2, "{args:?} {envs:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "more than one line: {stderr}");
        assert!(stderr.contains(setting), "{stderr:?} does not name {setting}");
        assert!(stdout.is_empty());
    }
}

#[test]
fn a_secret_setting_is_never_echoed_back_in_the_error() {
    let (code, _, stderr) = run_watasu(&["serve", "--database-url", "mysql://root:hunter2@db/x"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("WATASU_DATABASE_URL"));
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

both_backends! {
    async fn migrations_apply_twice_without_harm(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::support::fresh_database(backend, dir.path()).await;
        let db = watasu::db::Db::connect(&url, Duration::from_secs(5)).await.unwrap();
        db.migrate().await.unwrap();
        db.migrate().await.unwrap();
        // The whole data model is there after the first migration.
        for table in ["users", "files", "shares", "otp_challenges", "sessions", "download_grants", "share_events"] {
            let sql = sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}"));
            let count: i64 = match &db {
                watasu::db::Db::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
                watasu::db::Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
            };
            assert_eq!(count, 0, "{table}");
        }
    }

    async fn the_users_table_refuses_an_address_that_is_not_lower_cased(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let insert = "INSERT INTO users (email, display_name, password_hash, role) VALUES ('A@x.test', 'a', 'h', 'sender')";
        let refused = match app.db() {
            watasu::db::Db::Sqlite(pool) => sqlx::query(insert).execute(pool).await.is_err(),
            watasu::db::Db::Postgres(pool) => sqlx::query(insert).execute(pool).await.is_err(),
        };
        assert!(refused, "an upper-case email passed the CHECK");
    }

    async fn regenerate_moves_the_session_to_a_new_id_and_kills_the_old_one(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let store = sessions(&app);
        let first = store.create().await.unwrap();
        let renewed = store.regenerate(first.session.id).await.unwrap().expect("the session is live");
        assert_eq!(renewed.session.id, first.session.id, "state stays with the session");
        assert_ne!(renewed.cookie_value, first.cookie_value);
        assert_ne!(renewed.session.csrf_secret, first.session.csrf_secret);
        assert!(store.load(first.cookie_value.expose()).await.unwrap().is_none(), "the old id still works");
        assert_eq!(store.load(renewed.cookie_value.expose()).await.unwrap().unwrap().id, first.session.id);
    }

    async fn a_session_ends_after_its_idle_time_and_at_its_absolute_expiry(backend: Backend) {
        let app = TestApp::spawn_with(backend, |s| s.session_idle = Duration::from_secs(3600)).await;
        let store = sessions(&app);
        let idle = store.create().await.unwrap();
        assert!(store.load(idle.cookie_value.expose()).await.unwrap().is_some());
        // An hour and a second without a request, by the database's clock.
        crate::support::execute(
            app.db(),
            "UPDATE sessions SET last_seen_at = unixepoch('subsec') - 3601 WHERE id = $1",
            "UPDATE sessions SET last_seen_at = now() - interval '3601 seconds' WHERE id = $1",
            idle.session.id,
        )
        .await;
        assert!(store.load(idle.cookie_value.expose()).await.unwrap().is_none(), "an idle session lived on");

        let app = TestApp::spawn(backend).await;
        let store = sessions(&app);
        let old = store.create().await.unwrap();
        crate::support::execute(
            app.db(),
            "UPDATE sessions SET expires_at = unixepoch('subsec') - 1 WHERE id = $1",
            "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1",
            old.session.id,
        )
        .await;
        assert!(store.load(old.cookie_value.expose()).await.unwrap().is_none(), "a session outlived its absolute expiry");
        assert!(store.regenerate(old.session.id).await.unwrap().is_none(), "an expired session was regenerated");
    }

    async fn only_the_hash_of_a_session_id_is_stored(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let created = sessions(&app).create().await.unwrap();
        let stored: String = match app.db() {
            watasu::db::Db::Sqlite(pool) => sqlx::query_scalar("SELECT id_hash FROM sessions").fetch_one(pool).await.unwrap(),
            watasu::db::Db::Postgres(pool) => sqlx::query_scalar("SELECT id_hash FROM sessions").fetch_one(pool).await.unwrap(),
        };
        assert_ne!(stored, created.cookie_value.expose());
        assert_eq!(stored, watasu::secret::sha256_hex(created.cookie_value.expose()));
    }

    async fn a_garbage_or_unknown_cookie_is_treated_as_no_session(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        for forged in ["garbage", "'; DROP TABLE sessions; --", &"f".repeat(64), &"A".repeat(64)] {
            assert!(sessions(&app).load(forged).await.unwrap().is_none());
            let browser = app.browser();
            browser.set_cookie("watasu_session", forged);
            assert_eq!(browser.get("/").await.status, 200);
        }
    }

    async fn a_post_without_the_csrf_token_is_refused_and_changes_nothing(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let (browser, token, id) = browser_with_session(&app).await;

        let missing = browser.post_form("/logout", &[]).await;
        assert_eq!(missing.status, 403);
        let wrong = browser.post_form("/logout", &[("csrf_token", "0".repeat(64).as_str())]).await;
        assert_eq!(wrong.status, 403);
        assert!(session_exists(&app, id).await, "a refused request ended the session");
        assert!(missing.texts("h1").iter().any(|t| !t.is_empty()), "the 403 is a page");

        let accepted = browser.post_form("/logout", &[("csrf_token", token.as_str())]).await;
        assert_eq!(accepted.status, 303);
        assert!(!session_exists(&app, id).await);
    }

    async fn the_csrf_token_may_come_in_a_header_for_htmx(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let (browser, token, id) = browser_with_session(&app).await;
        let page = browser
            .post_form_with("/logout", &[], &[("X-CSRF-Token", token.as_str()), ("Sec-Fetch-Site", "same-origin")])
            .await;
        assert_eq!(page.status, 303);
        assert!(!session_exists(&app, id).await);
    }

    async fn a_cross_origin_post_is_refused_even_with_the_right_token(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let (browser, token, id) = browser_with_session(&app).await;
        let fields = [("csrf_token", token.as_str())];
        let cross_site = browser.post_form_with("/logout", &fields, &[("Sec-Fetch-Site", "cross-site")]).await;
        assert_eq!(cross_site.status, 403);
        let foreign_origin = browser.post_form_with("/logout", &fields, &[("Origin", "https://evil.example")]).await;
        assert_eq!(foreign_origin.status, 403);
        assert!(session_exists(&app, id).await);
    }

    async fn an_oversized_form_body_is_answered_413_and_changes_nothing(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let (browser, token, id) = browser_with_session(&app).await;
        let filler = "x".repeat(100 * 1024);
        let page = browser.post_form("/logout", &[("csrf_token", token.as_str()), ("filler", filler.as_str())]).await;
        assert_eq!(page.status, 413);
        assert!(session_exists(&app, id).await);
    }

    async fn the_logout_cookie_carries_the_safe_flags(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let (browser, token, _) = browser_with_session(&app).await;
        let page = browser.post_form("/logout", &[("csrf_token", token.as_str())]).await;
        let cookie = page.header("set-cookie").expect("the cookie is cleared");
        assert!(cookie.starts_with("watasu_session="), "{cookie}");
        for flag in ["HttpOnly", "SameSite=Lax", "Path=/"] {
            assert!(cookie.contains(flag), "{cookie} lacks {flag}");
        }
        assert!(!cookie.contains("Secure"), "plain http cannot keep a Secure cookie");
    }

    async fn a_database_outage_gives_503_and_recovery_is_automatic(backend: Backend) {
        // Only PostgreSQL can be stopped under a running app; SQLite is part of the process.
        if backend == Backend::Postgres {
            let cluster = tokio::task::spawn_blocking(PgCluster::start).await.unwrap();
            let url = cluster.create_database().await;
            let app = TestApp::spawn_with(backend, |s| {
                s.database_url = Some(url.clone());
                s.db_timeout = Duration::from_secs(2);
            })
            .await;
            let (browser, _, _) = browser_with_session(&app).await;
            assert_eq!(browser.get("/readyz").await.status, 200);

            let stopper = &cluster;
            tokio::task::block_in_place(|| stopper.pg_ctl_stop());
            let started = Instant::now();
            assert_eq!(browser.get("/readyz").await.status, 503);
            // A page that needs the database answers a friendly 503 page, quickly.
            let page = browser.get_with("/", &[("Accept-Language", "en")]).await;
            assert_eq!(page.status, 503);
            assert!(page.body.contains("briefly unavailable"), "{}", page.body);
            assert!(!page.body.to_lowercase().contains("sqlx") && !page.body.contains("postgres"));
            assert!(started.elapsed() < Duration::from_secs(10), "answers took {:?}", started.elapsed());

            tokio::task::block_in_place(|| stopper.pg_ctl_start());
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                if browser.get("/readyz").await.status == 200 && browser.get("/").await.status == 200 {
                    break;
                }
                assert!(Instant::now() < deadline, "no recovery after PostgreSQL came back");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        } else {
            // The SQLite counterpart: a ready app answers /readyz 200.
            let app = TestApp::spawn(backend).await;
            assert_eq!(app.browser().get("/readyz").await.status, 200);
        }
    }
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
