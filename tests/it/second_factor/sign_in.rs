//! Signing in with a second factor: a TOTP code within one step and once, a recovery code once,
//! wrong codes throttled per account and per pending sign-in, and a pending sign-in that expires.

use super::client::*;
use crate::{
    both_backends,
    support::{Backend, clock, count, execute},
};
use watasu::db::Sql;

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
    execute(app.db(), Sql::same("UPDATE totp_factors SET last_step = 0 WHERE user_id > $1"), 0).await;
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

both_backends!(
    a_password_then_a_totp_code_signs_in_on_a_new_session_id_and_the_code_works_once,
    a_wrong_code_changes_nothing_and_only_one_step_either_way_is_accepted,
    wrong_codes_count_per_account_from_every_address_and_only_time_ends_the_wait,
    a_pending_sign_in_takes_five_codes_from_any_number_of_addresses_then_ends_and_the_owner_is_mailed,
    a_recovery_code_signs_in_once,
    a_pending_sign_in_expires_and_sends_the_person_back_to_sign_in,
);
