//! Configuration, migrations, sessions and CSRF, on both backends.

use super::*;
use crate::support::Backend;
use watasu::on_db;

async fn migrations_apply_twice_without_harm(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = crate::support::fresh_database(backend, dir.path()).await;
    let db = watasu::db::Db::connect(&url, Duration::from_secs(5)).await.unwrap();
    db.migrate().await.unwrap();
    db.migrate().await.unwrap();
    // The whole data model is there after the first migration.
    for table in ["users", "files", "shares", "otp_challenges", "sessions", "download_grants", "share_events"] {
        let sql = sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}"));
        let count: i64 = on_db!(&db, |pool| sqlx::query_scalar(sql).fetch_one(pool).await.unwrap());
        assert_eq!(count, 0, "{table}");
    }
}

async fn the_users_table_refuses_an_address_that_is_not_lower_cased(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let insert = "INSERT INTO users (email, display_name, password_hash, role) VALUES ('A@x.test', 'a', 'h', 'sender')";
    let refused = on_db!(app.db(), |pool| sqlx::query(insert).execute(pool).await.is_err());
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
    app.set_ago("sessions", &["last_seen_at"], 3601, &clock::id(idle.session.id)).await;
    assert!(store.load(idle.cookie_value.expose()).await.unwrap().is_none(), "an idle session lived on");

    let app = TestApp::spawn(backend).await;
    let store = sessions(&app);
    let old = store.create().await.unwrap();
    app.expire_session_ago(old.session.id, 1).await;
    assert!(store.load(old.cookie_value.expose()).await.unwrap().is_none(), "a session outlived its absolute expiry");
    assert!(store.regenerate(old.session.id).await.unwrap().is_none(), "an expired session was regenerated");
}

async fn only_the_hash_of_a_session_id_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let created = sessions(&app).create().await.unwrap();
    let stored: String =
        on_db!(app.db(), |pool| { sqlx::query_scalar("SELECT id_hash FROM sessions").fetch_one(pool).await.unwrap() });
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

both_backends!(
    migrations_apply_twice_without_harm,
    the_users_table_refuses_an_address_that_is_not_lower_cased,
    regenerate_moves_the_session_to_a_new_id_and_kills_the_old_one,
    a_session_ends_after_its_idle_time_and_at_its_absolute_expiry,
    only_the_hash_of_a_session_id_is_stored,
    a_garbage_or_unknown_cookie_is_treated_as_no_session,
    a_post_without_the_csrf_token_is_refused_and_changes_nothing,
    the_csrf_token_may_come_in_a_header_for_htmx,
    a_cross_origin_post_is_refused_even_with_the_right_token,
    an_oversized_form_body_is_answered_413_and_changes_nothing,
    the_logout_cookie_carries_the_safe_flags,
    a_database_outage_gives_503_and_recovery_is_automatic
);

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
