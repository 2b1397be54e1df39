//! The second factor after a password: TOTP codes (within one step, each once, throttled like
//! passwords), recovery codes (each once), the pending sign-in (it expires, it reaches nothing, it
//! ends on a new session id), the team's policy walking an account through set-up, an admin's
//! reset and the command line's. Codes are computed from the key the set-up page shows, as an
//! authenticator app does.

mod client;

use totp_rs::Secret;

use self::client::*;
pub use self::client::{code, room_in_this_step};
use crate::{
    both_backends,
    cli_output::env_of,
    support::{Backend, PASSWORD, clock, count, execute, process::run_watasu},
};

async fn a_password_then_a_totp_code_signs_in_on_a_new_session_id_and_the_code_works_once(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, _) = owner_with_app(&app).await;
    let client = Client::new(&app, OWNERS_LAPTOP);

    assert_eq!(client.password(OWNER).await, "/login/second-factor");
    let pending_id = session_cookie(&client);
    assert!(!client.signed_in().await, "a pending sign-in reached /shares");
    assert_eq!(client.get("/account").await.header("location"), Some("/login"));
    room_in_this_step().await;
    let next = code(&secret, 1);
    let answer = client.code(&next).await;

    assert_eq!(answer.header("location"), Some("/shares"), "{}", answer.body);
    assert_ne!(session_cookie(&client), pending_id, "the session id did not change");
    assert!(client.signed_in().await);
    assert_eq!(count(app.db(), "SELECT count(*) FROM pending_sign_ins WHERE session_id > $1", 0).await, 0);
    let again = Client::new(&app, OWNERS_LAPTOP);
    again.password(OWNER).await;
    let replayed = again.code(&next).await;
    assert_eq!(replayed.status, 200);
    assert!(!replayed.texts("[role=alert]").is_empty(), "{}", replayed.body);
    assert!(!again.signed_in().await, "the same code signed in twice");
}

async fn a_wrong_code_changes_nothing_and_only_one_step_either_way_is_accepted(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, _) = owner_with_app(&app).await;
    // As if the app had not been used for a while: no step counts as used yet.
    execute(
        app.db(),
        "UPDATE totp_factors SET last_step = 0 WHERE user_id > $1",
        "UPDATE totp_factors SET last_step = 0 WHERE user_id > $1",
        0,
    )
    .await;
    let client = Client::new(&app, OWNERS_LAPTOP);
    client.password(OWNER).await;
    room_in_this_step().await;
    for (wrong, what) in [
        ("000000".to_owned(), "a wrong code"),
        (code(&secret, 2), "two steps ahead"),
        (code(&secret, -2), "two steps behind"),
        ("12345".to_owned(), "five digits"),
    ] {
        let answer = client.code(&wrong).await;
        assert_eq!(answer.status, 200, "{what}");
        assert!(!client.signed_in().await, "{what} signed in");
    }
    assert_eq!(client.code(&code(&secret, -1)).await.header("location"), Some("/shares"), "one step behind");
    let other = Client::new(&app, OWNERS_LAPTOP);
    other.password(OWNER).await;
    assert_eq!(other.code(&code(&secret, 1)).await.header("location"), Some("/shares"), "one step ahead");
}

async fn wrong_codes_count_per_account_from_every_address_and_only_time_ends_the_wait(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, _) = owner_with_app(&app).await;
    let attacker = Client::new(&app, ATTACKER);
    attacker.password(OWNER).await;
    for attempt in 1..=4 {
        assert_eq!(attacker.code("111111").await.status, 200, "free failure {attempt}");
    }
    assert_eq!(attacker.code("111111").await.header("location"), Some("/login?tries=1"));
    // The failures are as recent as can be whatever the machine's speed: dated ahead.
    app.set_ago("rate_limit_hits", &["at"], -600, "bucket LIKE '%|every-client|'").await;

    // A right password again, from another address, does not clear them…
    let elsewhere = Client::new(&app, "192.0.2.99");
    assert_eq!(elsewhere.password(OWNER).await, "/login/second-factor");
    let refused = elsewhere.code("222222").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.header("retry-after").is_some());
    // …and the owner, who is the only one to reach this step without a stranger knowing the
    // password, waits as well.
    let owner = Client::new(&app, OWNERS_LAPTOP);
    owner.password(OWNER).await;
    room_in_this_step().await;
    assert_eq!(owner.code(&code(&secret, 1)).await.status, 429);
    app.set_ago("rate_limit_hits", &["at"], clock::HOUR, "bucket LIKE '%|every-client|'").await;
    room_in_this_step().await;
    assert_eq!(owner.code(&code(&secret, 1)).await.header("location"), Some("/shares"), "the wait did not end");
}

async fn a_pending_sign_in_takes_five_codes_from_any_number_of_addresses_then_ends_and_the_owner_is_mailed(
    backend: Backend,
) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, _) = owner_with_app(&app).await;
    let attacker = Client::new(&app, ATTACKER);
    attacker.password(OWNER).await;
    let csrf = attacker.get("/login/second-factor").await.csrf_token();
    let addresses: Vec<String> = (1..=40).map(|i| format!("198.18.0.{i}")).collect();

    let guesses = addresses.iter().enumerate().map(|(i, address)| {
        let guess = format!("{:06}", 100_000 + i);
        let (browser, csrf) = (&attacker.browser, &csrf);
        async move {
            let headers = [("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", address.as_str())];
            browser.post_form_with("/login/second-factor", &[("csrf_token", csrf), ("code", &guess)], &headers).await
        }
    });
    let answers = futures_util::future::join_all(guesses).await;

    let tried = "SELECT count(*) FROM rate_limit_hits WHERE id > $1 AND bucket LIKE '%|sign-in:%'";
    let compared = count(app.db(), tried, 0).await;
    assert!(compared <= 5, "{compared} codes were compared for one pending sign-in");
    for answer in &answers {
        assert!([200, 303, 429].contains(&answer.status.as_u16()), "{} {}", answer.status, answer.body);
    }
    // The burst also made the account wait; a day later the pending sign-in's last tries are
    // its own, and wrong codes end it after five in all.
    app.set_ago("rate_limit_hits", &["at"], clock::DAY + clock::HOUR, "bucket LIKE '%|every-client|'").await;
    for _ in 0..5 {
        if attacker.get("/login/second-factor").await.status != 200 {
            break;
        }
        let answer = attacker.post("/login/second-factor", &[("csrf_token", &csrf), ("code", "999999")]).await;
        assert!(answer.status == 200 || answer.header("location") == Some("/login?tries=1"), "{}", answer.body);
    }
    assert!(count(app.db(), tried, 0).await <= 5, "the pending sign-in took more than five codes");
    room_in_this_step().await;
    let late = attacker.post("/login/second-factor", &[("csrf_token", &csrf), ("code", &code(&secret, 1))]).await;
    assert!(late.header("location").is_some_and(|l| l.starts_with("/login?")), "{:?} {}", late.status, late.body);
    assert!(!attacker.signed_in().await, "a code signed in after the pending sign-in ended");
    assert_eq!(count(app.db(), "SELECT count(*) FROM pending_sign_ins WHERE session_id > $1", 0).await, 0);
    let login = attacker.get("/login?tries=1").await;
    assert_eq!(login.texts("[data-tries-used-up]").len(), 1);
    let mail = app.smtp.wait_for(1, std::time::Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, [OWNER]);
    assert!(mail.text().contains("5"), "{}", mail.text());
    assert!(!mail.text().contains(ATTACKER), "{}", mail.text());
}

async fn a_recovery_code_signs_in_once(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, _, codes) = owner_with_app(&app).await;
    let client = Client::new(&app, OWNERS_LAPTOP);
    client.password(OWNER).await;
    let typed = codes[3].to_uppercase().replace('-', " ");
    assert_eq!(client.code(&typed).await.header("location"), Some("/shares"));
    assert_eq!(client.get("/account").await.attr("[data-codes-left]", "data-codes-left").as_deref(), Some("9"));

    let later = Client::new(&app, OWNERS_LAPTOP);
    later.password(OWNER).await;
    assert_eq!(later.code(&codes[3]).await.status, 200);
    assert!(!later.signed_in().await, "a recovery code worked twice");
    assert_eq!(later.code(&codes[4]).await.header("location"), Some("/shares"));
}

async fn a_pending_sign_in_expires_and_sends_the_person_back_to_sign_in(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let (_, secret, _) = owner_with_app(&app).await;
    let client = Client::new(&app, OWNERS_LAPTOP);
    client.password(OWNER).await;
    let csrf = client.get("/login/second-factor").await.csrf_token();
    app.set_ago("pending_sign_ins", &["expires_at"], 1, clock::ALL).await;

    assert_eq!(client.get("/login/second-factor").await.header("location"), Some("/login?expired=1"));
    room_in_this_step().await;
    let late = client.post("/login/second-factor", &[("csrf_token", &csrf), ("code", &code(&secret, 1))]).await;
    assert_eq!(late.header("location"), Some("/login?expired=1"));
    assert!(!client.signed_in().await);
    let login = client.get("/login?expired=1").await;
    assert_eq!(login.texts("[data-expired]").len(), 1);
}

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
    let key = page.texts("[data-totp-secret]").pop().unwrap().replace(' ', "");
    let secret = Secret::try_from_base32(&key).unwrap().as_bytes().to_vec();
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
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::new(&app, OWNERS_LAPTOP);
    assert_eq!(owner.password(OWNER).await, "/shares");
    let account = owner.get("/account").await;
    owner.post("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;
    let setup = owner.get("/account/totp").await;
    let key = setup.texts("[data-totp-secret]").pop().unwrap().replace(' ', "");
    let secret = Secret::try_from_base32(&key).unwrap().as_bytes().to_vec();
    let waiting = owner.get("/account").await;
    assert_eq!(waiting.attr("[data-continue-totp]", "href").as_deref(), Some("/account/totp"), "{}", waiting.body);
    assert!(waiting.attr("#start_password", "name").is_none(), "{}", waiting.body);
    // The owner walks away; sixteen minutes later someone holds a session of the account.
    let aged = execute(
        app.db(),
        "UPDATE totp_factors SET created_at = created_at - $1",
        "UPDATE totp_factors SET created_at = created_at - make_interval(secs => $1)",
        16 * 60,
    )
    .await;
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
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::new(&app, OWNERS_LAPTOP);
    assert_eq!(owner.password(OWNER).await, "/shares");
    let account = owner.get("/account").await;
    owner.post("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;
    // Within its fifteen minutes, someone holding the owner's session but not the password
    // scans the waiting key into their own app.
    let setup = owner.get("/account/totp").await;
    let key = setup.texts("[data-totp-secret]").pop().unwrap().replace(' ', "");
    let secret = Secret::try_from_base32(&key).unwrap().as_bytes().to_vec();
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
    a_password_then_a_totp_code_signs_in_on_a_new_session_id_and_the_code_works_once,
    a_wrong_code_changes_nothing_and_only_one_step_either_way_is_accepted,
    wrong_codes_count_per_account_from_every_address_and_only_time_ends_the_wait,
    a_pending_sign_in_takes_five_codes_from_any_number_of_addresses_then_ends_and_the_owner_is_mailed,
    a_recovery_code_signs_in_once,
    a_pending_sign_in_expires_and_sends_the_person_back_to_sign_in,
    the_teams_policy_walks_an_account_without_a_factor_through_set_up_before_signing_in,
    an_admins_reset_ends_the_members_sessions_and_removes_their_factors,
    removing_the_app_asks_for_the_current_password,
    a_signed_in_session_cannot_set_up_an_app_without_the_current_password,
    a_set_up_left_waiting_past_its_fifteen_minutes_can_no_longer_be_seen_or_confirmed,
    a_set_up_waiting_for_its_first_code_is_finished_only_with_the_current_password,
    the_database_holds_neither_the_apps_key_nor_a_recovery_code,
    the_command_line_resets_a_members_factors_and_says_what_it_did
);
