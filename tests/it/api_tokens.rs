//! Personal API tokens: made on the account page after the current password and shown once,
//! stored only as a hash, listed by their prefix; what `GET /api/v1/me` answers a right, wrong,
//! expired, revoked, disabled sender's or departing sender's token; that a bearer request gets no
//! cookie and passes no form; an admin revoking a member's token; the limits per client and per
//! token; the host's `watasu token` commands against the real binary, whose log then holds no
//! token.

use std::time::Duration;

use watasu::sql;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, execute, installation::Installation, tables_as_text},
};

const SENDER: &str = "sato@example.test";
const ADMIN: &str = "admin@example.test";

/// Posts the account page's token form; answers the page that came back.
async fn post_token_form(browser: &Browser, name: &str, scopes: &[&str], expires: &str, password: &str) -> Page {
    let account = browser.get("/account").await;
    assert_eq!(account.status, 200, "{}", account.body);
    let csrf = account.csrf_token();
    let mut fields = vec![("csrf_token", csrf.as_str()), ("name", name), ("expires", expires), ("password", password)];
    fields.extend(scopes.iter().map(|s| ("scope", *s)));
    browser.post_form("/account/tokens", &fields).await
}

/// Makes a token on the account page; answers it as the page showed it.
pub(crate) async fn token_from_page(browser: &Browser, scopes: &[&str]) -> String {
    let created = post_token_form(browser, "CI deploy", scopes, "90d", PASSWORD).await;
    assert_eq!(created.status, 200, "{}", created.body);
    created.texts("[data-new-token]").pop().expect("the page shows the token")
}

/// `GET /api/v1/me` from a browser without cookies, with `authorization` if any.
async fn me(app: &TestApp, authorization: Option<&str>) -> Page {
    let headers: Vec<(&str, &str)> = authorization.map(|a| ("Authorization", a)).into_iter().collect();
    Browser::new(&app.base).get_with("/api/v1/me", &headers).await
}

fn assert_refused(page: &Page, what: &str) {
    assert_eq!(page.status, 401, "{what}: {}", page.body);
    assert!(page.header("www-authenticate").unwrap_or_default().starts_with("Bearer"), "{what}: {:?}", page.headers);
    assert!(page.header("set-cookie").is_none(), "{what}: a cookie was set");
}

async fn a_token_made_on_the_account_page_is_shown_once_listed_by_prefix_and_stored_only_as_a_hash(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;

    let wrong = post_token_form(&browser, "CI deploy", &["shares:read"], "90d", "not the password").await;
    assert_eq!(wrong.status, 400, "{}", wrong.body);
    assert_eq!(wrong.attr("#token_password", "aria-invalid").as_deref(), Some("true"));
    let no_scope = post_token_form(&browser, "CI deploy", &[], "90d", PASSWORD).await;
    assert_eq!(no_scope.status, 400);
    assert!(no_scope.html().select(&scraper::Selector::parse("#token-scope-error").unwrap()).next().is_some());

    let created = post_token_form(&browser, "CI deploy", &["shares:read", "shares:write"], "30d", PASSWORD).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.header("cache-control"), Some("no-store"));
    let token = created.texts("[data-new-token]").pop().unwrap();
    assert!(token.starts_with("wts_"), "{token}");

    let account = browser.get("/account").await;
    assert!(!account.body.contains(&token), "the account page shows the token again");
    let lookup = &token[4..16];
    assert_eq!(account.texts("[data-token-prefix]"), [format!("wts_{lookup}…")]);
    assert_eq!(account.texts("[data-token-scopes] code"), ["shares:read", "shares:write"]);

    let secret = &token[17..];
    for (table, text) in tables_as_text(app.db()).await {
        for window in secret.as_bytes().windows(8) {
            let piece = std::str::from_utf8(window).unwrap();
            assert!(!text.contains(piece), "{table} holds {piece:?}, a piece of the token's secret");
        }
    }
    let answer = me(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

async fn a_right_token_answers_who_it_acts_for_without_a_cookie_and_records_its_use(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&browser, &["requests:read", "shares:read"]).await;

    // The scheme in another case and a browser's own cookie change nothing.
    let answer = Browser::new(&app.base).get_with("/api/v1/me", &[("Authorization", &format!("bearer {token}"))]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.header("set-cookie").is_none(), "a bearer answer set a cookie");
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body, serde_json::json!({ "email": SENDER, "scopes": ["shares:read", "requests:read"] }));
    let used = "SELECT count(*) FROM api_tokens WHERE last_used_at IS NOT NULL AND id > $1";
    assert_eq!(crate::support::count(app.db(), used, 0).await, 1, "the use was not recorded");
}

async fn missing_malformed_wrong_and_unknown_tokens_are_refused_alike(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&browser, &["shares:read"]).await;
    let (head, last) = token.split_at(token.len() - 1);
    let wrong_secret = format!("{head}{}", if last == "a" { "b" } else { "a" });
    let unknown_id = format!("wts_000000000000{}", &token[16..]);

    assert_refused(&me(&app, None).await, "no header");
    for (what, header) in [
        ("another scheme", format!("Basic {token}")),
        ("malformed", "Bearer wts_short".to_owned()),
        ("wrong secret", format!("Bearer {wrong_secret}")),
        ("unknown lookup id", format!("Bearer {unknown_id}")),
    ] {
        assert_refused(&me(&app, Some(&header)).await, what);
    }
    assert_eq!(me(&app, Some(&format!("Bearer {token}"))).await.status, 200);
}

async fn an_expired_or_revoked_token_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let expiring = token_from_page(&browser, &["shares:read"]).await;
    let revoked = token_from_page(&browser, &["shares:read"]).await;
    assert_eq!(me(&app, Some(&format!("Bearer {expiring}"))).await.status, 200);

    let lookup = &expiring[4..16];
    let expire = sql!("UPDATE api_tokens SET expires_at = " now " - " secs("1") " WHERE id = $1");
    let id: i64 = watasu::on_db!(app.db(), |pool| sqlx::query_scalar("SELECT id FROM api_tokens WHERE lookup_id = $1")
        .bind(lookup)
        .fetch_one(pool)
        .await
        .unwrap());
    assert_eq!(execute(app.db(), expire, id).await, 1);
    assert_refused(&me(&app, Some(&format!("Bearer {expiring}"))).await, "expired");

    let account = browser.get("/account").await;
    let revoked_id: i64 =
        watasu::on_db!(app.db(), |pool| sqlx::query_scalar("SELECT id FROM api_tokens WHERE lookup_id = $1")
            .bind(&revoked[4..16])
            .fetch_one(pool)
            .await
            .unwrap());
    let done = browser
        .post_form(&format!("/account/tokens/{revoked_id}/revoke"), &[("csrf_token", &account.csrf_token())])
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_refused(&me(&app, Some(&format!("Bearer {revoked}"))).await, "revoked");
    let after = done.follow(&browser, &[]).await;
    assert!(after.body.contains("data-token-done"), "the page says it was revoked");
}

async fn disabling_a_sender_or_opening_their_deletion_case_revokes_their_tokens(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin(ADMIN).await;
    let admin = app.sign_in(ADMIN, PASSWORD).await;
    let member = app.signed_in_sender(SENDER).await;
    let disabled_token = token_from_page(&member, &["shares:read"]).await;
    let member_id: i64 = watasu::on_db!(app.db(), |pool| sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(SENDER)
        .fetch_one(pool)
        .await
        .unwrap());

    let team = admin.get("/team").await;
    let disabled = admin.post_form(&format!("/team/{member_id}/disable"), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(disabled.status, 303, "{}", disabled.body);
    assert_refused(&me(&app, Some(&format!("Bearer {disabled_token}"))).await, "disabled sender");
    let live = "SELECT count(*) FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL";
    assert_eq!(crate::support::count(app.db(), live, member_id).await, 0, "the token was revoked with the account");

    // Another sender deletes their own account: the deletion case's opening revokes theirs.
    let leaving = app.signed_in_sender("leaving@example.test").await;
    let leaving_token = token_from_page(&leaving, &["shares:read"]).await;
    let account = leaving.get("/account").await;
    let deleted =
        leaving.post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;
    assert!(deleted.status.is_success() || deleted.status == 303, "{}", deleted.body);
    assert_refused(&me(&app, Some(&format!("Bearer {leaving_token}"))).await, "sender being deleted");
    let live = "SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL AND id > $1";
    assert_eq!(crate::support::count(app.db(), live, 0).await, 0, "the deletion case left a token live");
}

async fn a_bearer_token_opens_no_page_and_passes_no_form(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&browser, &["shares:read", "shares:write"]).await;
    let bearer = format!("Bearer {token}");
    let stranger = Browser::new(&app.base);

    let account = stranger.get_with("/account", &[("Authorization", &bearer)]).await;
    assert_eq!(account.status, 303, "a bearer token signed a browser in: {}", account.body);
    let headers = [("Authorization", bearer.as_str()), ("Sec-Fetch-Site", "same-origin")];
    let form =
        stranger.post_form_with("/account/tokens", &[("name", "more"), ("scope", "shares:read")], &headers).await;
    assert_eq!(form.status, 403, "a bearer token passed a form: {}", form.body);
    let live = "SELECT count(*) FROM api_tokens WHERE id > $1";
    assert_eq!(crate::support::count(app.db(), live, 0).await, 1, "the form made a token");
    assert!(stranger.cookie("watasu_session").is_none());
}

async fn a_browser_behind_a_password_prompt_uploads_with_its_session_and_stays_csrf_guarded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = crate::uploads::Tus::sender(&app, SENDER).await;
    // What a browser sends by itself to a host behind a proxy's password prompt.
    let proxy = ("Authorization", "Basic c3RhZ2luZzpzZWNyZXQ=");
    let metadata =
        format!("filename {}", base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "report.txt"));
    let create = |request: reqwest::RequestBuilder| {
        request.header(proxy.0, proxy.1).header("Upload-Length", "1").header("Upload-Metadata", &metadata).send()
    };

    let created = Page::read(create(tus.request(reqwest::Method::POST, "/uploads")).await.unwrap()).await;
    assert_eq!(created.status, 201, "the session's upload was taken for a wrong token: {}", created.body);
    let forged = tus.browser.client.post(tus.browser.url("/uploads")).header("Tus-Resumable", "1.0.0");
    let forged = Page::read(create(forged.header("Sec-Fetch-Site", "cross-site")).await.unwrap()).await;
    assert_eq!(forged.status, 403, "a cross-site call with a proxy's credentials: {}", forged.body);
    let uploads = "SELECT count(*) FROM uploads WHERE upload_length >= $1";
    assert_eq!(crate::support::count(app.db(), uploads, 0).await, 1, "the forged call made an upload");
}

async fn an_admin_sees_the_teams_tokens_and_revokes_one(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin(ADMIN).await;
    let admin = app.sign_in(ADMIN, PASSWORD).await;
    let member = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&member, &["shares:read"]).await;

    let team = admin.get("/team").await;
    assert_eq!(team.texts("[data-token-owner]"), [SENDER]);
    let action = team.attr("[data-team-tokens] form", "action").expect("a revoke button");
    let done = admin.post_form(&action, &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_refused(&me(&app, Some(&format!("Bearer {token}"))).await, "revoked by an admin");
    let after = done.follow(&admin, &[]).await;
    assert_eq!(after.texts("[data-team-tokens] [data-token-ended]").len(), 1);

    // A sender cannot revoke through the admin's route.
    let other = token_from_page(&member, &["shares:read"]).await;
    let page = member.get("/account").await;
    let id = page.attrs("[data-tokens] li", "data-token-id")[0].clone();
    let refused = member.post_form(&format!("/team/tokens/{id}/revoke"), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(refused.status, 404);
    assert_eq!(me(&app, Some(&format!("Bearer {other}"))).await.status, 200);
}

async fn a_strangers_wrong_tokens_do_not_lock_out_the_owners_right_one(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let browser = app.signed_in_sender(SENDER).await;
    let token = token_from_page(&browser, &["shares:read"]).await;
    let wrong = format!("Bearer wts_000000000000_{}", "x".repeat(43));
    let from = |client: &'static str, auth: &str| {
        let browser = Browser::new(&app.base);
        let auth = auth.to_owned();
        async move { browser.get_with("/api/v1/me", &[("Authorization", &auth), ("X-Forwarded-For", client)]).await }
    };
    for _ in 0..20 {
        assert_eq!(from("203.0.113.9", &wrong).await.status, 401);
    }
    let limited = from("203.0.113.9", &wrong).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.header("retry-after").is_some());
    let owner = from("198.51.100.20", &format!("Bearer {token}")).await;
    assert_eq!(owner.status, 200, "the owner was locked out: {}", owner.body);
}

async fn a_burst_of_wrong_tokens_gets_no_more_full_checks_than_the_limit(backend: Backend) {
    use watasu::services::tokens::TokenRefusal;
    let app = TestApp::spawn(backend).await;
    let tokens = app.state.services.tokens.clone();
    let wrong = format!("Bearer wts_000000000000_{}", "x".repeat(43));
    let client: std::net::IpAddr = "203.0.113.7".parse().unwrap();

    let burst = (0..60).map(|_| {
        let (tokens, wrong) = (tokens.clone(), wrong.clone());
        tokio::spawn(async move { tokens.authenticate(Some(&wrong), client).await })
    });
    let (mut checked, mut held) = (0, 0);
    for answer in futures_util::future::join_all(burst).await {
        match answer.unwrap() {
            Err(TokenRefusal::Unknown) => checked += 1,
            Err(TokenRefusal::TooMany(_)) => held += 1,
            other => panic!("a wrong token was answered {other:?}"),
        }
    }
    assert_eq!(checked + held, 60);
    assert!(checked <= 20, "{checked} wrong tokens of a burst of 60 were checked in full");
    // Every full check left its failure on record, and nothing else did.
    const RECORDED: &str = "SELECT count(*) FROM rate_limit_hits WHERE bucket = 'api-token-failures:203.0.113.7'";
    let recorded: i64 = watasu::on_db!(app.db(), |pool| sqlx::query_scalar(RECORDED).fetch_one(pool).await.unwrap());
    assert_eq!(recorded, checked);
}

async fn a_token_over_its_request_limit_waits_while_another_token_goes_on(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender(SENDER).await;
    let busy = format!("Bearer {}", token_from_page(&browser, &["shares:read"]).await);
    let other = format!("Bearer {}", token_from_page(&browser, &["shares:read"]).await);
    let client = Browser::new(&app.base);

    // The limit is 600 a minute; the window cannot pass while the test runs.
    for n in 0..600 {
        let answer = client.get_with("/api/v1/me", &[("Authorization", &busy)]).await;
        assert_eq!(answer.status, 200, "request {n} was refused: {}", answer.body);
    }
    let limited = client.get_with("/api/v1/me", &[("Authorization", &busy)]).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.header("retry-after").is_some());
    assert_eq!(client.get_with("/api/v1/me", &[("Authorization", &other)]).await.status, 200);
}

async fn the_host_commands_create_list_and_revoke_tokens_and_the_log_holds_none(backend: Backend) {
    let inst = Installation::new(backend).await;
    inst.add_sender(SENDER);
    let dir = inst.dir.path().to_str().unwrap();
    let key = crate::support::test_secret_key();
    let unknown_scope = ["token", "create", "--user", SENDER, "--name", "x", "--scope", "shares:admin"];
    let settings = ["--data-dir", dir, "--database-url", &inst.url, "--secret-key", &key];
    let args: Vec<&str> = unknown_scope.iter().chain(settings.iter()).copied().collect();
    let refused = tokio::task::block_in_place(|| crate::support::process::run_watasu(&args, &[]));
    assert_eq!(refused.0, 2, "an unknown scope is a usage error: {refused:?}");
    assert!(refused.2.contains("shares:admin"), "{refused:?}");

    let out = inst.run(&[
        "token",
        "create",
        "--user",
        SENDER,
        "--name",
        "CI",
        "--scope",
        "shares:read",
        "--expires-in",
        "30d",
    ]);
    let token = out.lines().last().unwrap().to_owned();
    assert!(token.starts_with("wts_"), "{out}");
    let listed: serde_json::Value = serde_json::from_str(&inst.run(&["token", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["email"], SENDER);
    assert_eq!(listed[0]["lookup_id"], &token[4..16]);
    assert_eq!(listed[0]["scopes"], serde_json::json!(["shares:read"]));
    assert!(!listed.to_string().contains(&token[17..]), "the list shows the secret");
    let table = inst.run(&["token", "list", "--user", SENDER]);
    assert!(table.contains(&format!("wts_{}…", &token[4..16])), "{table}");

    let server = inst.start(&[]);
    let client = Browser::new(&server.base());
    let answer = client.get_with("/api/v1/me", &[("Authorization", &format!("Bearer {token}"))]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let wrong = client.get_with("/api/v1/me", &[("Authorization", &format!("Bearer {token}x"))]).await;
    assert_eq!(wrong.status, 401);

    let revoked = inst.run(&["token", "revoke", &format!("wts_{}…", &token[4..16])]);
    assert!(revoked.contains("revoked"), "{revoked}");
    let after = client.get_with("/api/v1/me", &[("Authorization", &format!("Bearer {token}"))]).await;
    assert_eq!(after.status, 401);

    tokio::task::block_in_place(|| server.wait_for_log("bearer token refused: token revoked", Duration::from_secs(10)));
    let log = server.log();
    assert!(log.contains("/api/v1/me"), "the access log covers the requests:\n{log}");
    assert!(!log.contains(&token[17..]), "the token's secret is in the log:\n{log}");
    assert!(!log.contains(&token[..20]), "the token is in the log:\n{log}");
}

both_backends!(
    a_token_made_on_the_account_page_is_shown_once_listed_by_prefix_and_stored_only_as_a_hash,
    a_right_token_answers_who_it_acts_for_without_a_cookie_and_records_its_use,
    missing_malformed_wrong_and_unknown_tokens_are_refused_alike,
    an_expired_or_revoked_token_is_refused,
    disabling_a_sender_or_opening_their_deletion_case_revokes_their_tokens,
    a_bearer_token_opens_no_page_and_passes_no_form,
    a_browser_behind_a_password_prompt_uploads_with_its_session_and_stays_csrf_guarded,
    an_admin_sees_the_teams_tokens_and_revokes_one,
    a_strangers_wrong_tokens_do_not_lock_out_the_owners_right_one,
    a_burst_of_wrong_tokens_gets_no_more_full_checks_than_the_limit,
    a_token_over_its_request_limit_waits_while_another_token_goes_on,
    the_host_commands_create_list_and_revoke_tokens_and_the_log_holds_none,
);
