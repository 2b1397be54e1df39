//! Resetting a member's second factors, by an admin on the team page or on the command line.

use super::client::*;
use crate::{
    both_backends,
    cli_output::env_of,
    support::{Backend, count, process::run_watasu},
};

async fn an_admins_reset_ends_the_members_sessions_and_removes_their_factors(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, _, codes) = owner_with_app(&app).await;
    let member = Client::new(&app, OWNERS_LAPTOP);
    member.password(OWNER).await;
    member.code(&codes[0]).await;
    assert!(member.signed_in().await);
    app.create_admin("admin@example.test").await;
    let admin = Client::new(&app, ATTACKER);
    admin.password("admin@example.test").await;
    let member_id = count(app.db(), "SELECT id FROM users WHERE id > $1 AND role = 'sender'", 0).await;
    let confirm = admin.get(&format!("/team/{member_id}/reset-factors")).await;
    assert_eq!(confirm.status, 200);

    let reset = admin.post(&format!("/team/{member_id}/reset-factors"), &[("csrf_token", &confirm.csrf_token())]).await;

    assert_eq!(reset.header("location"), Some("/team?done=factors-reset"));
    assert!(!member.signed_in().await, "the member is still signed in");
    assert_eq!(count(app.db(), "SELECT count(*) FROM totp_factors WHERE user_id = $1", member_id).await, 0);
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares", "a factor is still asked for");
}

async fn the_command_line_resets_a_members_factors_and_says_what_it_did(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    owner_with_app(&app).await;
    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, stdout, stderr) = tokio::task::block_in_place(|| run_watasu(&["user", "reset-factors", OWNER], &env));

    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains("removed the authenticator app") && stdout.contains("10 unused recovery codes"),
        "{stdout}"
    );
    let logged =
        stderr.lines().find(|l| l.contains("second factors reset")).unwrap_or_else(|| panic!("not logged: {stderr}"));
    assert!(logged.contains("account_id=") && logged.contains("command line"), "{logged}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM recovery_codes WHERE id > $1", 0).await, 0);
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares");
    let (status, _, stderr) =
        tokio::task::block_in_place(|| run_watasu(&["user", "reset-factors", "nobody@example.test"], &env));
    assert_eq!(status, 2, "{stderr}");
}

both_backends!(
    an_admins_reset_ends_the_members_sessions_and_removes_their_factors,
    the_command_line_resets_a_members_factors_and_says_what_it_did,
);
