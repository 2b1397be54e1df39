//! Sender accounts on the web: first-run setup, signing in and out, the password change.

use crate::{
    both_backends,
    support::{Backend, TestApp, without_csrf},
};
use watasu::on_db;

use crate::support::PASSWORD;

async fn the_setup_page_creates_the_first_admin_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let link = app.setup_link.clone().expect("a fresh install prints a setup link");
    let path = link.strip_prefix(&app.base).unwrap().to_owned();
    let browser = app.browser();
    let form = browser.get(&path).await;
    assert_eq!(form.status, 200);
    let created = browser
        .post_form(
            &path,
            &[
                ("csrf_token", &form.csrf_token()),
                ("name", "管理 太郎"),
                ("email", "Admin@Example.test"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    assert_eq!(created.header("location"), Some("/shares"));
    let account = browser.get("/account").await;
    assert_eq!(account.texts(".account-email"), ["admin@example.test"]);
    assert_eq!(account.texts(".account-name"), ["管理 太郎"]);

    assert_eq!(browser.get(&path).await.status, 404, "the setup page still works");
    let again = app.browser();
    assert_eq!(again.get(&path).await.status, 404);
    let role: String =
        on_db!(app.db(), |pool| sqlx::query_scalar("SELECT role FROM users").fetch_one(pool).await.unwrap());
    assert_eq!(role, "admin");
}

async fn the_setup_page_refuses_a_weak_password_and_creates_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let path = app.setup_link.clone().unwrap().strip_prefix(&app.base).unwrap().to_owned();
    let browser = app.browser();
    let form = browser.get_with(&path, &[("Accept-Language", "en")]).await;
    for weak in ["short", "password1234"] {
        let page = browser
            .post_form_with(
                &path,
                &[("csrf_token", &form.csrf_token()), ("name", "A"), ("email", "a@example.test"), ("password", weak)],
                &[("Sec-Fetch-Site", "same-origin"), ("Accept-Language", "en")],
            )
            .await;
        assert_eq!(page.status, 400, "{weak}");
        assert!(page.texts("[role=alert]")[0].contains("password"), "{weak}: {:?}", page.texts("[role=alert]"));
    }
    assert_eq!(watasu::accounts::Users::new(app.db().clone()).count().await.unwrap(), 0);
    assert_eq!(browser.get(&path).await.status, 200, "a refused form closed the setup page");
}

async fn a_wrong_setup_token_is_not_found(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.browser();
    assert_eq!(browser.get(&format!("/setup/{}", "0".repeat(64))).await.status, 404);
}

async fn signing_in_changes_the_session_id_and_signing_out_ends_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let browser = app.browser();
    // A session from before the sign-in (one an attacker could even have planted).
    let planted = app.state.sessions.create().await.unwrap();
    let before = planted.cookie_value.expose().to_owned();
    browser.set_cookie("watasu_session", &before);
    let form = browser.get("/login").await;
    let answer = browser
        .post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", "S@example.test"), ("password", PASSWORD)])
        .await;
    assert_eq!(answer.status, 303);
    let after = browser.cookie("watasu_session").unwrap();
    assert_ne!(before, after, "the session id did not change on sign-in");
    assert_eq!(browser.get("/account").await.status, 200);

    let stale = app.browser();
    stale.set_cookie("watasu_session", &before);
    assert_eq!(stale.get("/account").await.status, 303, "the pre-login id still signs in");

    let account = browser.get("/account").await;
    let out = browser.post_form("/logout", &[("csrf_token", &account.csrf_token())]).await;
    assert_eq!(out.status, 303);
    let copied = app.browser();
    copied.set_cookie("watasu_session", &after);
    assert_eq!(copied.get("/account").await.header("location"), Some("/login"), "the session outlived sign-out");
}

async fn unknown_address_and_wrong_password_get_the_same_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let unknown = app.browser().sign_in("nobody@example.test", PASSWORD).await;
    let wrong = app.browser().sign_in("s@example.test", "lantern orchard seventeen brass").await;
    assert_eq!(unknown.status, wrong.status);
    assert_eq!(
        without_csrf(&unknown.body).replace("nobody@example.test", "X"),
        without_csrf(&wrong.body).replace("s@example.test", "X")
    );
    assert_eq!(unknown.texts("[role=alert]").len(), 1);
}

async fn repeated_failed_sign_ins_are_slowed_with_429(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let browser = app.browser();
    for attempt in 1..=5 {
        assert_eq!(browser.sign_in("s@example.test", "not the password at all").await.status, 200, "attempt {attempt}");
    }
    app.hold_rate_limits().await;
    let limited = browser.sign_in("s@example.test", PASSWORD).await;
    assert_eq!(limited.status, 429);
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "the first delay is short: {retry}s");
}

async fn changing_the_password_signs_out_every_other_session(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let (here, elsewhere) = (app.browser(), app.browser());
    assert_eq!(here.sign_in("s@example.test", PASSWORD).await.status, 303);
    assert_eq!(elsewhere.sign_in("s@example.test", PASSWORD).await.status, 303);

    let account = here.get("/account").await;
    let wrong = here
        .post_form(
            "/account/password",
            &[
                ("csrf_token", &account.csrf_token()),
                ("current_password", "guess guess guess"),
                ("new_password", "violet harbor quietly ninety"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 400);
    assert_eq!(elsewhere.get("/account").await.status, 200, "a refused change ended sessions");

    let changed = here
        .post_form(
            "/account/password",
            &[
                ("csrf_token", &wrong.csrf_token()),
                ("current_password", PASSWORD),
                ("new_password", "violet harbor quietly ninety"),
            ],
        )
        .await;
    assert_eq!(changed.status, 303);
    assert_eq!(changed.header("location"), Some("/account?saved=password#password"));
    let account = here.get("/account?saved=password").await;
    assert_eq!(account.status, 200, "this session was ended too");
    assert_eq!(account.texts("#password [role=status]").len(), 1);
    assert_eq!(elsewhere.get("/account").await.status, 303, "the other session survived");
    assert_eq!(app.browser().sign_in("s@example.test", "violet harbor quietly ninety").await.status, 303);
}

async fn the_account_page_needs_a_signed_in_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let page = app.browser().get("/account").await;
    assert_eq!(page.status, 303);
    assert_eq!(page.header("location"), Some("/login"));
}

both_backends!(
    the_setup_page_creates_the_first_admin_once,
    the_setup_page_refuses_a_weak_password_and_creates_nothing,
    a_wrong_setup_token_is_not_found,
    signing_in_changes_the_session_id_and_signing_out_ends_it,
    unknown_address_and_wrong_password_get_the_same_answer,
    repeated_failed_sign_ins_are_slowed_with_429,
    changing_the_password_signs_out_every_other_session,
    the_account_page_needs_a_signed_in_sender
);
