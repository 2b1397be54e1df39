//! Invariant 2, checked where a leak would show: after a whole walk through a share (landing,
//! email step, code, download, cookies), no text or byte column of any table holds the link
//! token, the code or a cookie value (the form cookie, both session cookies), and the recipient's
//! address is only where the share keeps it; and the real binary's log holds none of them either.

use std::time::Duration;

use crate::{
    both_backends,
    lifecycle::quiet_app,
    support::{Backend, Browser, SmtpSink, TestApp, process::Server, tables_as_text},
};

/// The address as the share was created for it and as the recipient types it.
const TYPED: &str = "Recipient@Example.test";
const STORED: &str = "recipient@example.test";

/// What a walk through the flow saw, all of which must stay secret.
struct Walk {
    token: String,
    code: String,
    cookies: Vec<String>,
}

impl Walk {
    fn secrets(&self) -> Vec<(&'static str, String)> {
        let mut secrets = vec![("the link token", self.token.clone()), ("the code", self.code.clone())];
        secrets.extend(self.cookies.iter().map(|c| ("a cookie value", c.clone())));
        secrets
    }
}

/// Landing, email step, code, download page and download, as a browser does them.
async fn walk_through(browser: &Browser, smtp: &SmtpSink, token: &str) -> Walk {
    let en = [("Accept-Language", "en")];
    let landing = browser.get_with(&format!("/s/{token}"), &en).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    // A visit starts no session: the form carries a token signed over its own cookie.
    let mut cookies = vec![browser.cookie("watasu_form").expect("the landing page sets its form cookie")];
    let before = smtp.messages().len();
    let asked = browser
        .post_form(&format!("/s/{token}/email"), &[("csrf_token", &landing.csrf_token()), ("email", TYPED)])
        .await;
    assert_eq!(asked.status, 303, "{}", asked.body);
    let code_step = browser.follow(token, asked).await;
    assert_eq!(code_step.status, 200, "{}", code_step.body);
    cookies.push(browser.cookie("watasu_session").expect("the address submission starts a session"));
    let code = smtp.code_for_after(STORED, before).await;
    let verified = browser
        .post_form(&format!("/s/{token}/code"), &[("csrf_token", &code_step.csrf_token()), ("code", &code)])
        .await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    cookies.push(browser.cookie("watasu_session").unwrap());
    assert_ne!(cookies[1], cookies[2], "the session id was regenerated");
    let download_page = browser.get_with(&format!("/s/{token}"), &en).await;
    assert_eq!(download_page.attr("#step", "data-step").as_deref(), Some("download"), "{}", download_page.body);
    let download = crate::support::Page::read(browser.download(token, &download_page.csrf_token()).await).await;
    assert_eq!(download.status, 200);
    assert_eq!(download.body, "the file contents\n");
    Walk { token: token.to_owned(), code, cookies }
}

/// The tables that may hold the recipient's address: the share names it, and the sender's
/// download receipt (until it is sent) says who downloaded.
const ADDRESS_MAY_BE_IN: [&str; 2] = ["shares", "mail_outbox"];

async fn after_a_whole_walk_no_table_holds_a_token_a_code_or_a_cookie(backend: Backend) {
    let app = quiet_app(backend).await;
    let share = app.create_share().await;
    let walk = walk_through(&app.browser(), &app.smtp, &share.token).await;

    let tables = tables_as_text(app.db()).await;
    assert!(
        tables.iter().any(|(t, text)| t == "share_events" && text.contains("downloaded")),
        "the scan sees the events"
    );
    assert!(
        tables.iter().any(|(t, text)| t == "shares" && text.contains(STORED)),
        "the scan sees the address where it is kept"
    );
    for (table, text) in &tables {
        let lower = text.to_lowercase();
        for (what, secret) in walk.secrets() {
            assert!(!lower.contains(&secret.to_lowercase()), "{what} is stored in {table}");
        }
        if !ADDRESS_MAY_BE_IN.contains(&table.as_str()) {
            assert!(!lower.contains(STORED), "the recipient's address is stored in {table}");
        }
    }
}

async fn after_a_whole_walk_the_log_holds_no_token_code_cookie_or_address(backend: Backend) {
    // The in-process app prepares the database and the share; the real binary serves the walk
    // on the same database and folder, and its log is what is read.
    let app = quiet_app(backend).await;
    let share = app.create_share().await;
    let args = [
        "--database-url",
        &app.state.config.database_url,
        "--smtp-url",
        &app.smtp.url(),
        "--secret-key",
        &"6b".repeat(32),
    ];
    let dir = app.data_dir.path().to_owned();
    let server = tokio::task::block_in_place(|| Server::start(&dir, &args));

    let walk = walk_through(&Browser::new(&server.base()), &app.smtp, &share.token).await;

    tokio::task::block_in_place(|| server.wait_for_log("/s/[redacted]/download", Duration::from_secs(10)));
    tokio::task::block_in_place(|| server.wait_for_log("/s/[redacted]/file", Duration::from_secs(10)));
    let log = server.log();
    assert!(log.contains("/s/[redacted]/code"), "the access log covers the walk:\n{log}");
    let lower = log.to_lowercase();
    for (what, secret) in walk.secrets() {
        assert!(!lower.contains(&secret.to_lowercase()), "{what} is in the log:\n{log}");
    }
    assert!(!lower.contains(STORED), "the recipient's address is in the log:\n{log}");
    drop(server);
    let _: &TestApp = &app;
}

both_backends!(
    after_a_whole_walk_no_table_holds_a_token_a_code_or_a_cookie,
    after_a_whole_walk_the_log_holds_no_token_code_cookie_or_address
);
