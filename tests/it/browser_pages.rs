//! Every page, in both languages, at phone and desktop width: a tour that opens each one, so the
//! harness's axe-core check and screenshot (support/browser/pages.rs) cover the whole site, not
//! only the pages a walk happens to pass. The walks themselves (recipient steps, uploads, the
//! share page's refresh) are tested in the other browser tests; this one only visits (and makes an
//! API token and a webhook endpoint, whose secret's page a form's answer alone reaches). It runs on
//! SQLite alone: which database answers does not change a page's markup.

use crate::support::{
    Backend, PASSWORD, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    db::count,
    eventually,
};

const ADMIN: &str = "admin@example.test";

/// The pages a signed-out visitor can open, given a live share's token and an invitation path.
fn public_pages(token: &str, invitation: &str) -> Vec<String> {
    let unknown_link = format!("/s/{}", "0".repeat(64));
    vec![
        "/".into(),
        "/login".into(),
        format!("/s/{token}"),
        unknown_link,
        invitation.into(),
        "/no-such-page".into(),
        "/api/v1/docs".into(),
    ]
}

/// The pages a signed-in admin can open, given a share, another member and a maintenance run.
fn signed_in_pages(share_id: i64, member_id: i64, run_id: i64) -> Vec<String> {
    let fixed = [
        "/shares",
        "/shares/new",
        "/account",
        "/account/totp",
        "/team",
        "/admin/maintenance",
        "/admin/deletions",
        "/webhooks",
    ];
    let mut pages: Vec<String> = fixed.iter().map(|p| (*p).to_owned()).collect();
    pages.extend([
        format!("/shares/{share_id}"),
        format!("/shares/{share_id}/revoke"),
        format!("/team/{member_id}/disable"),
        format!("/team/{member_id}/delete"),
        format!("/admin/maintenance/{run_id}"),
        "/shares/999999".into(),
    ]);
    pages
}

/// Opens `path` and checks what the harness does not: the page fits its width, and no phrase mark
/// of the Japanese catalogue ("|", turned into line-break opportunities) shows as text.
async fn open(browser: &BrowserSession, base: &str, path: &str) {
    browser.goto(&format!("{base}{path}")).await;
    browser.wait_for("main h1", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(path).await;
    let text = browser.text("body").await;
    assert!(!text.contains('|'), "{path}: a phrase mark shows as text: {text}");
}

/// Makes an API token through the account page's form, which leads to the page that shows it
/// once (a POST's answer, so no path of the tour reaches it); the account and team pages then
/// list it.
async fn make_api_token(browser: &BrowserSession, base: &str) {
    browser.goto(&format!("{base}/account")).await;
    browser.fill("#token_name", "CI deploy").await;
    browser.click("input[name=scope][value='shares:read']").await;
    browser.fill("#token_password", PASSWORD).await;
    browser.click("[data-create-token-button]").await;
    browser.wait_for("[data-new-token]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the new token's page").await;
}

/// Registers a webhook endpoint through the form, which leads to the page that shows its secret
/// once; then opens the endpoint's page (with its buttons and log) from there.
async fn make_webhook(browser: &BrowserSession, base: &str) {
    browser.goto(&format!("{base}/webhooks")).await;
    browser.fill("#webhook_url", "https://hooks.example.test/in").await;
    browser.click("[data-create-webhook-button]").await;
    browser.wait_for("[data-new-secret]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the new secret's page").await;
    browser.click("[data-continue]").await;
    browser.wait_for("[data-webhook-test]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("a webhook endpoint's page").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_page_passes_axe_core_in_both_languages_at_both_widths() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    // A second installation without SMTP: only it has the development outbox page.
    let outbox_app = TestApp::spawn_with(Backend::Sqlite, |s| s.smtp_url = None).await;
    let admin_id = app.create_admin(ADMIN).await;
    let member_id = app.create_sender_with_password("member@example.test", "Member Mori", PASSWORD).await;
    let share =
        app.fake_share().sender(admin_id).recipient("client@example.test").file("plan.pdf", b"plan").create().await;
    let invitation = app.invite(&app.sign_in(ADMIN, PASSWORD).await, "new@example.test").await;
    outbox_app.create_admin(ADMIN).await;
    // The sweeps run at start-up, each recorded as a run: its page is on the tour.
    const RUNS: &str = "SELECT count(*) FROM maintenance_runs WHERE id > $1";
    eventually(DEFAULT_WAIT, "a maintenance run", async || count(app.db(), RUNS, 0).await > 0).await;
    let run_id = count(app.db(), "SELECT max(id) FROM maintenance_runs WHERE id > $1", 0).await;

    for language in ["ja", "en"] {
        for options in [BrowserOptions::desktop(), BrowserOptions::phone()] {
            let browser = BrowserSession::start(options.language(language)).await;
            for path in public_pages(&share.token, &invitation) {
                open(&browser, &app.base, &path).await;
            }
            browser.sign_in(&app.base, ADMIN).await;
            make_api_token(&browser, &app.base).await;
            make_webhook(&browser, &app.base).await;
            for path in signed_in_pages(share.id, member_id, run_id) {
                open(&browser, &app.base, &path).await;
            }
            browser.sign_in(&outbox_app.base, ADMIN).await;
            open(&browser, &outbox_app.base, "/dev/outbox").await;
            browser.close().await;
        }
    }
    outbox_app.stop().await;
    app.stop().await;
}

/// The GET routes of src/web that the tour above does not open, each with where its page is
/// checked instead (every browser test runs axe-core on each page it reaches) or why it is no page.
const NOT_TOURED: &[(&str, &str)] = &[
    ("/healthz", "a health check, plain text"),
    ("/readyz", "a health check, plain text"),
    ("/metrics", "Prometheus text behind a token"),
    ("/favicon.ico", "an image"),
    ("/static/:version/:name", "scripts, styles and images"),
    ("/maintenance/runs/:id", "the trigger's JSON answer"),
    ("/s/:token/file", "a file download"),
    ("/s/:token/files/:position", "a file download"),
    ("/requests/:id/files/:position", "a file download"),
    ("/requests/:id/archive", "a ZIP download"),
    ("/shares/:id/live", "an HTMX fragment of the share page (browser_dashboard.rs)"),
    ("/login/sso", "a redirect to the identity provider (browser_sso.rs)"),
    ("/login/sso/callback", "the provider's redirect back (browser_sso.rs)"),
    ("/setup/:token", "exists only while no account does (browser_dashboard.rs walks it)"),
    ("/login/second-factor", "needs a pending sign-in (browser_second_factor.rs)"),
    ("/login/enrol", "needs a pending sign-in under the team's policy (browser_second_factor.rs)"),
    ("/shares/:id/created", "shown once after a share is made (browser_dashboard.rs)"),
    ("/s/:token/note", "a claimed note (browser_note.rs)"),
    ("/requests", "file requests (browser_file_requests.rs)"),
    ("/requests/:id", "a file request (browser_file_requests.rs)"),
    ("/admin/deletions/:reference", "a deletion case (browser_deletion_case.rs)"),
    ("/team/:id/enable", "a disabled member's page (browser_team.rs)"),
    ("/team/:id/reset-factors", "a member with a second factor (browser_second_factor.rs)"),
    ("/webhooks/:id", "opened by make_webhook above"),
];

/// Every `.at("PATH", …get(…))` of src/web: the pages and files a GET reaches.
fn get_routes() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut sources = Vec::new();
    walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web"), &mut sources);
    let mut routes = Vec::new();
    for source in sources {
        let mut rest = source.as_str();
        while let Some(at) = rest.find(".at(") {
            rest = &rest[at + 4..];
            let Some(path) = rest.trim_start().strip_prefix('"').and_then(|p| p.split('"').next()) else { continue };
            let methods = &rest[..rest.find(".at(").unwrap_or(rest.len()).min(rest.find('}').unwrap_or(rest.len()))];
            if methods.contains("get(") {
                routes.push(path.to_owned());
            }
        }
    }
    routes
}

/// A route pattern (`/shares/:id`) against a toured path (`/shares/12`).
fn matches(pattern: &str, path: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let (pattern, path): (Vec<_>, Vec<_>) = (pattern.split('/').collect(), path.split('/').collect());
    pattern.len() == path.len() && pattern.iter().zip(&path).all(|(p, s)| p.starts_with(':') || p == s)
}

#[test]
fn every_page_a_get_reaches_is_toured_or_says_where_it_is_checked() {
    let routes = get_routes();
    assert!(routes.len() > 30, "the routes were not found: {routes:?}");
    let mut toured = public_pages("TOKEN", "/invite/TOKEN");
    toured.extend(signed_in_pages(1, 2, 3));
    toured.push("/dev/outbox".into());
    let untoured: Vec<_> = routes
        .iter()
        .filter(|route| !toured.iter().any(|path| matches(route, path)))
        .filter(|route| !NOT_TOURED.iter().any(|(r, _)| r == route))
        .collect();
    assert!(untoured.is_empty(), "GET routes neither toured nor listed in NOT_TOURED with a reason: {untoured:?}");
    let stale: Vec<_> = NOT_TOURED.iter().filter(|(r, _)| !routes.iter().any(|route| route == r)).collect();
    assert!(stale.is_empty(), "NOT_TOURED names routes that do not exist: {stale:?}");
}
