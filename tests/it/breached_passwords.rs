//! Passwords known from breaches are refused wherever a new password is taken (set-up, an
//! invitation, a password change, `watasu user add`), with a message that says why and keeps what
//! the person typed but the password.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp, fresh_database},
};

/// The famous passphrase, spelled so that only the list's normalisation catches it.
const BREACHED: &str = "Correct Horse Battery Staple";
const WHY_EN: &str = "This password appears in lists of passwords leaked from other sites";
const WHY_JA: &str = "漏えいしたパスワードの一覧に載っている";

async fn the_setup_page_refuses_a_breached_password_in_either_language_and_keeps_the_rest(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let path = app.setup_link.clone().unwrap().strip_prefix(&app.base).unwrap().to_owned();
    let browser = app.browser();
    let form = browser.get(&path).await;

    for (lang, why) in [("en", WHY_EN), ("ja", WHY_JA)] {
        let fields = [
            ("csrf_token", form.csrf_token()),
            ("name", "Hanako Sato".to_owned()),
            ("email", "hanako@example.test".to_owned()),
            ("password", BREACHED.to_owned()),
        ];
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = browser
            .post_form_with(&path, &fields, &[("Sec-Fetch-Site", "same-origin"), ("Accept-Language", lang)])
            .await;

        assert_eq!(page.status, 400, "{lang}");
        let alerts = page.texts("[role=alert]");
        assert!(alerts.len() == 1 && alerts[0].contains(why), "{lang}: {alerts:?}");
        assert_eq!(page.attr("input#name", "value").as_deref(), Some("Hanako Sato"));
        assert_eq!(page.attr("input#email", "value").as_deref(), Some("hanako@example.test"));
        assert_eq!(page.attr("input#password", "value"), None, "the password came back");
        assert_eq!(page.attr("input#password", "aria-invalid").as_deref(), Some("true"));
    }
    assert_eq!(watasu::accounts::Users::new(app.db().clone()).count().await.unwrap(), 0);
}

async fn an_invitation_and_a_password_change_refuse_a_breached_password_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let invitation = app.invite(&admin, "new@example.test").await;
    let invited = app.browser();
    let form = invited.get(&invitation).await;

    let accepted = invited
        .post_form(&invitation, &[("csrf_token", &form.csrf_token()), ("name", "New Member"), ("password", BREACHED)])
        .await;
    let account = admin.get("/account").await;
    let changed = admin
        .post_form(
            "/account/password",
            &[("csrf_token", &account.csrf_token()), ("current_password", PASSWORD), ("new_password", BREACHED)],
        )
        .await;

    assert_eq!(accepted.status, 400);
    assert!(accepted.texts("[role=alert]").concat().contains(WHY_JA), "{:?}", accepted.texts("[role=alert]"));
    assert_eq!(accepted.attr("input#name", "value").as_deref(), Some("New Member"));
    assert_eq!(invited.get(&invitation).await.status, 200, "a refused form used the invitation");
    assert_eq!(changed.status, 400);
    assert!(changed.texts("[role=alert]").concat().contains(WHY_JA), "{:?}", changed.texts("[role=alert]"));
    assert_eq!(app.browser().sign_in("admin@example.test", PASSWORD).await.status, 303, "the password changed");
}

async fn user_add_refuses_a_breached_password_and_says_why(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let mut add = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["user", "add", "--email", "s@example.test", "--name", "Sato", "--password-stdin"])
        .args(["--data-dir", dir.path().to_str().unwrap(), "--database-url", &url])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    add.stdin.take().unwrap().write_all(format!("{BREACHED}\n").as_bytes()).unwrap();
    let output = tokio::task::block_in_place(|| add.wait_with_output()).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);

    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("lists of passwords leaked from other sites"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
}

both_backends!(
    the_setup_page_refuses_a_breached_password_in_either_language_and_keeps_the_rest,
    an_invitation_and_a_password_change_refuse_a_breached_password_and_change_nothing,
    user_add_refuses_a_breached_password_and_says_why
);
