//! Setting up and removing an authenticator app: the team's policy walks an account through it, the
//! current password guards each change, a waiting set-up expires, and no key or code is stored readable.

use totp_rs::Secret;

use super::client::*;
use crate::{
    both_backends,
    support::{Backend, PASSWORD, count, execute},
};
use watasu::sql;

async fn the_teams_policy_walks_an_account_without_a_factor_through_set_up_before_signing_in(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = Client::new(&app, OWNERS_LAPTOP);
    admin.password("admin@example.test").await;
    let team = admin.get("/team").await;
    let saved =
        admin.post("/team/sign-in-policy", &[("csrf_token", &team.csrf_token()), ("require_second_factor", "1")]).await;
    assert_eq!(saved.header("location"), Some("/team?done=policy"));
    assert_eq!(admin.get("/team").await.attr("#require_second_factor", "checked").as_deref(), Some(""));
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let client = Client::new(&app, OWNERS_LAPTOP);

    assert_eq!(client.password(OWNER).await, "/login/enrol");
    assert!(!client.signed_in().await, "signed in before setting up a factor");
    let page = client.get("/login/enrol").await;
    assert_eq!(page.status, 200);
    let secret = secret_shown(&page);
    assert_eq!(
        client.post("/login/enrol", &[("csrf_token", &page.csrf_token()), ("code", "000000")]).await.status,
        400
    );
    assert!(!client.signed_in().await);
    room_in_this_step().await;
    let done = client.post("/login/enrol", &[("csrf_token", &page.csrf_token()), ("code", &code(&secret, 0))]).await;

    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.texts("[data-recovery-codes] code").len(), 10);
    assert!(client.signed_in().await);
    let next_time = Client::new(&app, OWNERS_LAPTOP);
    assert_eq!(next_time.password(OWNER).await, "/login/second-factor");
}

async fn removing_the_app_asks_for_the_current_password(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (client, _, _) = owner_with_app(&app).await;
    let account = client.get("/account").await;
    assert!(account.texts("[data-totp-on]").len() == 1, "{}", account.body);

    let wrong =
        client.post("/account/totp/remove", &[("csrf_token", &account.csrf_token()), ("password", "a guess")]).await;
    assert_eq!(wrong.status, 400);
    assert_eq!(count(app.db(), "SELECT count(*) FROM totp_factors WHERE user_id > $1", 0).await, 1);
    let removed =
        client.post("/account/totp/remove", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;

    assert_eq!(removed.header("location"), Some("/account?saved=second-factor#second-factor"));
    assert_eq!(count(app.db(), "SELECT count(*) FROM totp_factors WHERE user_id > $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM recovery_codes WHERE user_id > $1", 0).await, 0);
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares");
}

async fn a_signed_in_session_cannot_set_up_an_app_without_the_current_password(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    // Someone holding the owner's signed-in session, without the password.
    let holder = Client::new(&app, ATTACKER);
    assert_eq!(holder.password(OWNER).await, "/shares");
    let account = holder.get("/account").await;

    let refused = holder.post("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", "a guess")]).await;

    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.attr("#start_password", "aria-invalid").as_deref(), Some("true"), "{}", refused.body);
    assert_eq!(count(app.db(), "SELECT count(*) FROM totp_factors WHERE user_id > $1", 0).await, 0);
    assert_eq!(holder.get("/account/totp").await.header("location"), Some("/account#second-factor"));
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares", "the owner now owes a code");
}

async fn a_set_up_left_waiting_past_its_fifteen_minutes_can_no_longer_be_seen_or_confirmed(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (owner, _, secret) = owner_setting_up_an_app(&app).await;
    let waiting = owner.get("/account").await;
    assert_eq!(waiting.attr("[data-continue-totp]", "href").as_deref(), Some("/account/totp"), "{}", waiting.body);
    assert!(waiting.attr("#start_password", "name").is_none(), "{}", waiting.body);
    // The owner walks away; sixteen minutes later someone holds a session of the account.
    let aged = execute(app.db(), sql!("UPDATE totp_factors SET created_at = created_at - " secs("$1")), 16 * 60).await;
    assert_eq!(aged, 1);
    let holder = Client::new(&app, ATTACKER);
    assert_eq!(holder.password(OWNER).await, "/shares");

    assert_eq!(holder.get("/account/totp").await.header("location"), Some("/account#second-factor"));
    let account = holder.get("/account").await;
    assert!(account.attr("[data-continue-totp]", "href").is_none(), "{}", account.body);
    assert_eq!(account.attr("#start_password", "name").as_deref(), Some("password"), "{}", account.body);
    room_in_this_step().await;
    let right = code(&secret, 0);
    holder
        .post(
            "/account/totp/confirm",
            &[("csrf_token", &account.csrf_token()), ("code", &right), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM totp_factors WHERE confirmed_at IS NOT NULL AND user_id > $1", 0).await,
        0
    );
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares", "the owner now owes a code");
}

async fn a_set_up_waiting_for_its_first_code_is_finished_only_with_the_current_password(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    // Within its fifteen minutes, someone holding the owner's session but not the password
    // scans the waiting key into their own app.
    let (owner, setup, secret) = owner_setting_up_an_app(&app).await;
    room_in_this_step().await;
    let right = code(&secret, 0);

    for guess in ["", "a guess"] {
        let refused = owner
            .post(
                "/account/totp/confirm",
                &[("csrf_token", &setup.csrf_token()), ("code", &right), ("password", guess)],
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert_eq!(refused.attr("#confirm_password", "aria-invalid").as_deref(), Some("true"), "{}", refused.body);
    }
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM totp_factors WHERE confirmed_at IS NOT NULL AND user_id > $1", 0).await,
        0
    );
    assert_eq!(Client::new(&app, OWNERS_LAPTOP).password(OWNER).await, "/shares", "the owner now owes a code");
    let done = owner
        .post("/account/totp/confirm", &[("csrf_token", &setup.csrf_token()), ("code", &right), ("password", PASSWORD)])
        .await;
    assert_eq!(done.texts("[data-recovery-codes] code").len(), 10, "{}", done.body);
}

async fn the_database_holds_neither_the_apps_key_nor_a_recovery_code(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, codes) = owner_with_app(&app).await;
    let key = Secret::new(secret.clone().into_boxed_slice()).to_base32().to_lowercase();
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut kept = vec![key, hex];
    kept.extend(codes.iter().flat_map(|c| [c.clone(), c.replace('-', "")]));

    for (table, text) in crate::support::tables_as_text(app.db()).await {
        let text = text.to_lowercase();
        for secret in &kept {
            assert!(!text.contains(secret.as_str()), "{table} holds {secret:?}");
        }
    }
}

both_backends!(
    the_teams_policy_walks_an_account_without_a_factor_through_set_up_before_signing_in,
    removing_the_app_asks_for_the_current_password,
    a_signed_in_session_cannot_set_up_an_app_without_the_current_password,
    a_set_up_left_waiting_past_its_fifteen_minutes_can_no_longer_be_seen_or_confirmed,
    a_set_up_waiting_for_its_first_code_is_finished_only_with_the_current_password,
    the_database_holds_neither_the_apps_key_nor_a_recovery_code,
);
