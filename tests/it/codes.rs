//! One-time codes: six digits, only an HMAC stored, five tries claimed atomically, used once,
//! replaced by a newer code, dead after ten minutes, bound to one share, and a per-share cap on
//! wrong codes that locks the share.

use std::sync::Arc;
use watasu::on_db;

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use tokio::sync::Barrier;
use watasu::otp::CodeOutcome;

use crate::support::clock;
use crate::{
    both_backends,
    support::{Backend, TestApp, TestShare, count, execute},
};
use watasu::sql;

/// A share and a browser session that asks for its codes.
async fn share_and_session(app: &TestApp) -> (TestShare, i64) {
    let share = app.create_share().await;
    let session = app.state.sessions.create().await.unwrap();
    (share, session.session.id)
}

async fn issue(app: &TestApp, share_id: i64, session_id: i64) -> String {
    app.state.codes.issue(share_id, session_id, true).await.unwrap().expect("a mailed code").expose().to_owned()
}

async fn verify(app: &TestApp, share_id: i64, session_id: i64, code: &str) -> CodeOutcome {
    app.state.codes.verify(share_id, session_id, code).await.unwrap()
}

/// A six-digit code that is certainly not `code`.
fn other_than(code: &str) -> String {
    format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000)
}

async fn newest_challenge(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT max(id) FROM otp_challenges WHERE share_id = $1", share_id).await
}

async fn attempts(app: &TestApp, challenge_id: i64) -> i64 {
    count(app.db(), "SELECT CAST(attempts AS BIGINT) FROM otp_challenges WHERE id = $1", challenge_id).await
}

async fn code_mac(app: &TestApp, challenge_id: i64) -> String {
    const SQL: &str = "SELECT code_mac FROM otp_challenges WHERE id = $1";
    on_db!(app.db(), |pool| sqlx::query_scalar(SQL).bind(challenge_id).fetch_one(pool).await.unwrap())
}

/// Verifies every `(session, guess)` at once, all tasks released together by one barrier.
async fn verify_at_once(app: &TestApp, share_id: i64, guesses: Vec<(i64, String)>) -> Vec<CodeOutcome> {
    let barrier = Arc::new(Barrier::new(guesses.len()));
    let tasks: Vec<_> = guesses
        .into_iter()
        .map(|(session_id, guess)| {
            let (codes, barrier) = (app.state.codes.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                codes.verify(share_id, session_id, &guess).await.unwrap()
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

/// Submits `code` 20 times at once from one session.
async fn submit_concurrently(app: &TestApp, share_id: i64, session_id: i64, code: &str) -> Vec<CodeOutcome> {
    verify_at_once(app, share_id, vec![(session_id, code.to_owned()); 20]).await
}

async fn a_code_is_six_digits_and_only_its_hmac_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;

    let code = issue(&app, share.id, session_id).await;

    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()), "not six digits: {code:?}");
    let stored = code_mac(&app, newest_challenge(&app, share.id).await).await;
    assert!(
        stored.len() == 64 && stored.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "not a hex SHA-256 MAC: {stored:?}"
    );
    assert_ne!(stored, code, "the code itself is stored");
    assert_ne!(stored, hex::encode(Sha256::digest(code.as_bytes())), "an unkeyed hash is stored");
}

async fn the_stored_mac_is_keyed_with_the_instance_pepper_over_challenge_id_and_code(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;

    let code = issue(&app, share.id, session_id).await;

    let challenge = newest_challenge(&app, share.id).await;
    let mac_with = |key: &[u8]| {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).unwrap();
        mac.update(&challenge.to_be_bytes());
        mac.update(code.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    };
    let instance_key = watasu::secret::SecretKey::from_hex(&crate::support::test_secret_key()).unwrap();
    let pepper = instance_key.derive(watasu::secret::Purpose::OtpPepper);
    let stored = code_mac(&app, challenge).await;
    assert_eq!(stored, mac_with(&pepper), "not HMAC-SHA256(pepper, challenge id ‖ code)");
    assert_ne!(stored, mac_with(b""), "the MAC is not keyed");
}

async fn a_code_lives_exactly_ten_minutes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;
    let challenge = newest_challenge(&app, share.id).await;

    let lifetime_ms = count(
        app.db(),
        match backend {
            Backend::Sqlite => "SELECT CAST(round((expires_at - created_at) * 1000) AS BIGINT) FROM otp_challenges WHERE id = $1",
            Backend::Postgres => "SELECT CAST(round(EXTRACT(EPOCH FROM expires_at - created_at) * 1000) AS BIGINT) FROM otp_challenges WHERE id = $1",
        },
        challenge,
    )
    .await;
    // Nine minutes and fifty seconds later (by the database's clock) it still works.
    app.shift_back("otp_challenges", &["expires_at", "created_at"], 590, &clock::id(challenge)).await;
    let late = verify(&app, share.id, session_id, &code).await;

    assert!((599_990..=600_010).contains(&lifetime_ms), "a code lives {lifetime_ms} ms");
    assert_eq!(late, CodeOutcome::Verified);
}

async fn a_withheld_challenge_counts_tries_like_any_other_but_never_verifies(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;

    let code = app.state.codes.issue(share.id, session_id, false).await.unwrap();
    let challenge = newest_challenge(&app, share.id).await;

    assert!(code.is_none(), "a withheld challenge handed out a code");
    let stored = code_mac(&app, challenge).await;
    assert!(stored.len() == 64 && stored.bytes().all(|b| b.is_ascii_hexdigit()), "{stored:?}");
    assert!(app.state.codes.has_live_code(share.id, session_id).await.unwrap());
    let mut outcomes = Vec::new();
    for guess in ["000000", "123456", "999999", "111111", "654321", "000001"] {
        outcomes.push(verify(&app, share.id, session_id, guess).await);
    }
    let expected: Vec<CodeOutcome> =
        (0..5).rev().map(|tries_left| CodeOutcome::Wrong { tries_left }).chain([CodeOutcome::NoLiveCode]).collect();
    assert_eq!(outcomes, expected);
}

async fn the_right_code_verifies_once_and_then_no_more(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;

    let first = verify(&app, share.id, session_id, &code).await;
    let second = verify(&app, share.id, session_id, &code).await;

    assert_eq!(first, CodeOutcome::Verified);
    assert_eq!(second, CodeOutcome::NoLiveCode);
}

async fn a_wrong_code_uses_one_of_five_tries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;

    let outcome = verify(&app, share.id, session_id, &other_than(&code)).await;

    assert_eq!(outcome, CodeOutcome::Wrong { tries_left: 4 });
    assert_eq!(attempts(&app, newest_challenge(&app, share.id).await).await, 1);
}

async fn five_wrong_tries_kill_the_code_so_even_the_right_one_fails_after(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;
    let wrong = other_than(&code);

    let mut tries_left = Vec::new();
    for _ in 0..5 {
        tries_left.push(verify(&app, share.id, session_id, &wrong).await);
    }
    let right = verify(&app, share.id, session_id, &code).await;

    let expected: Vec<_> = (0..5).rev().map(|left| CodeOutcome::Wrong { tries_left: left }).collect();
    assert_eq!(tries_left, expected);
    assert_eq!(right, CodeOutcome::NoLiveCode);
    assert!(!app.state.codes.has_live_code(share.id, session_id).await.unwrap());
}

async fn a_malformed_code_uses_no_try(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;
    let challenge = newest_challenge(&app, share.id).await;

    for malformed in ["12a456", "12345", "1234567"] {
        let outcome = verify(&app, share.id, session_id, malformed).await;
        assert_eq!(outcome, CodeOutcome::Malformed, "{malformed:?}");
    }

    assert_eq!(attempts(&app, challenge).await, 0, "a malformed code used a try");
    assert_eq!(verify(&app, share.id, session_id, &code).await, CodeOutcome::Verified);
}

async fn a_new_code_replaces_the_earlier_one(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let old = issue(&app, share.id, session_id).await;
    let old_challenge = newest_challenge(&app, share.id).await;
    let mut new = issue(&app, share.id, session_id).await;
    while new == old {
        new = issue(&app, share.id, session_id).await; // one chance in a million
    }

    let with_old = verify(&app, share.id, session_id, &old).await;
    let with_new = verify(&app, share.id, session_id, &new).await;

    // The old code is checked against the live (new) code, so it is a wrong try on it.
    assert_eq!(with_old, CodeOutcome::Wrong { tries_left: 4 }, "the replaced code was not refused");
    assert_eq!(with_new, CodeOutcome::Verified);
    let invalidated = count(
        app.db(),
        "SELECT count(*) FROM otp_challenges WHERE id = $1 AND invalidated_at IS NOT NULL",
        old_challenge,
    )
    .await;
    assert_eq!(invalidated, 1, "the earlier challenge was not marked invalidated");
}

async fn an_expired_code_no_longer_works(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;
    let expired = execute(
        app.db(),
        sql!("UPDATE otp_challenges SET expires_at = " now " - " secs("1") " WHERE id = $1"),
        newest_challenge(&app, share.id).await,
    )
    .await;
    assert_eq!(expired, 1);

    let outcome = verify(&app, share.id, session_id, &code).await;

    assert_eq!(outcome, CodeOutcome::NoLiveCode);
}

async fn a_code_for_one_share_does_not_verify_another(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (a, session_id) = share_and_session(&app).await;
    let b = app.create_share().await;
    let code_a = issue(&app, a.id, session_id).await;
    let mut code_b = issue(&app, b.id, session_id).await;
    while code_b == code_a {
        code_b = issue(&app, b.id, session_id).await; // one chance in a million
    }

    let on_b = verify(&app, b.id, session_id, &code_a).await;

    assert_eq!(on_b, CodeOutcome::Wrong { tries_left: 4 });
    assert_eq!(verify(&app, a.id, session_id, &code_a).await, CodeOutcome::Verified, "A's code stopped working");
}

async fn fifteen_wrong_codes_across_challenges_lock_the_share(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let browsers =
        [app.state.sessions.create().await.unwrap().session.id, app.state.sessions.create().await.unwrap().session.id];

    // Three challenges of five tries, alternating sessions: the cap counts per share.
    let mut outcomes = Vec::new();
    for wrong in 0..15 {
        let session_id = browsers[wrong / 5 % 2];
        if wrong % 5 == 0 {
            let code = issue(&app, share.id, session_id).await;
            outcomes.push((session_id, other_than(&code)));
        }
        let (session_id, guess) = outcomes.last().unwrap().clone();
        let outcome = verify(&app, share.id, session_id, &guess).await;
        let expected = if wrong == 14 {
            CodeOutcome::Locked { now: true }
        } else {
            CodeOutcome::Wrong { tries_left: 4 - (wrong % 5) as i32 }
        };
        assert_eq!(outcome, expected, "wrong code number {}", wrong + 1);
    }

    let (session_id, guess) = outcomes.last().unwrap().clone();
    assert_eq!(verify(&app, share.id, session_id, &guess).await, CodeOutcome::Locked { now: false });
    let fresh_session = app.state.sessions.create().await.unwrap().session.id;
    let fresh = issue(&app, share.id, fresh_session).await;
    assert_eq!(verify(&app, share.id, fresh_session, &fresh).await, CodeOutcome::Locked { now: false });
    assert!(app.state.shares.open(&share.token).await.unwrap().locked, "the share does not show as locked");
    let wrong_codes = count(app.db(), "SELECT CAST(wrong_codes AS BIGINT) FROM shares WHERE id = $1", share.id).await;
    assert_eq!(wrong_codes, 15);
}

async fn twenty_concurrent_wrong_codes_get_exactly_five_tries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;
    let challenge = newest_challenge(&app, share.id).await;

    let outcomes = submit_concurrently(&app, share.id, session_id, &other_than(&code)).await;

    let mut tries_left: Vec<i32> = outcomes
        .iter()
        .filter_map(|o| match o {
            CodeOutcome::Wrong { tries_left } => Some(*tries_left),
            _ => None,
        })
        .collect();
    tries_left.sort_unstable();
    let dead = outcomes.iter().filter(|o| **o == CodeOutcome::NoLiveCode).count();
    assert_eq!(attempts(&app, challenge).await, 5);
    assert_eq!(tries_left, [0, 1, 2, 3, 4], "{outcomes:?}");
    assert_eq!(dead, 15, "{outcomes:?}");
}

async fn concurrent_wrong_codes_from_many_sessions_never_pass_the_share_cap(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let mut guesses = Vec::new();
    for _ in 0..8 {
        let session_id = app.state.sessions.create().await.unwrap().session.id;
        let code = issue(&app, share.id, session_id).await;
        guesses.extend(std::iter::repeat_n((session_id, other_than(&code)), 5));
    }
    let outcomes = verify_at_once(&app, share.id, guesses).await;

    let compared =
        outcomes.iter().filter(|o| matches!(o, CodeOutcome::Wrong { .. } | CodeOutcome::Locked { now: true })).count();
    let wrong_codes = count(app.db(), "SELECT CAST(wrong_codes AS BIGINT) FROM shares WHERE id = $1", share.id).await;
    assert_eq!(compared, 15, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| **o == CodeOutcome::Locked { now: true }).count(), 1, "{outcomes:?}");
    assert_eq!(wrong_codes, 15);
    assert!(app.state.shares.open(&share.token).await.unwrap().locked);
}

async fn a_right_code_in_a_burst_of_wrong_ones_is_compared_only_within_the_five_tries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for round in 0..6 {
        let (share, session_id) = share_and_session(&app).await;
        let code = issue(&app, share.id, session_id).await;
        let wrong = other_than(&code);
        let guesses = (0..20).map(|i| (session_id, if i == 10 { code.clone() } else { wrong.clone() })).collect();
        let outcomes = verify_at_once(&app, share.id, guesses).await;
        // Counting after comparing would let the right code through as a sixth comparison. A
        // right code compared early ends the challenge, so fewer than five is fine.
        let wrong = outcomes.iter().filter(|o| matches!(o, CodeOutcome::Wrong { .. })).count();
        let verified = outcomes.iter().filter(|o| **o == CodeOutcome::Verified).count();
        assert!(wrong + verified <= 5, "round {round}: {outcomes:?}");
        assert!(wrong == 5 || verified == 1, "round {round}: neither five tries nor the right code: {outcomes:?}");
    }
}

async fn twenty_concurrent_right_codes_verify_exactly_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (share, session_id) = share_and_session(&app).await;
    let code = issue(&app, share.id, session_id).await;

    let outcomes = submit_concurrently(&app, share.id, session_id, &code).await;

    let verified = outcomes.iter().filter(|o| **o == CodeOutcome::Verified).count();
    let dead = outcomes.iter().filter(|o| **o == CodeOutcome::NoLiveCode).count();
    assert_eq!(verified, 1, "{outcomes:?}");
    assert_eq!(dead, 19, "{outcomes:?}");
}

both_backends!(
    a_code_is_six_digits_and_only_its_hmac_is_stored,
    the_stored_mac_is_keyed_with_the_instance_pepper_over_challenge_id_and_code,
    a_code_lives_exactly_ten_minutes,
    a_withheld_challenge_counts_tries_like_any_other_but_never_verifies,
    the_right_code_verifies_once_and_then_no_more,
    a_wrong_code_uses_one_of_five_tries,
    five_wrong_tries_kill_the_code_so_even_the_right_one_fails_after,
    a_malformed_code_uses_no_try,
    a_new_code_replaces_the_earlier_one,
    an_expired_code_no_longer_works,
    a_code_for_one_share_does_not_verify_another,
    fifteen_wrong_codes_across_challenges_lock_the_share,
    twenty_concurrent_wrong_codes_get_exactly_five_tries,
    concurrent_wrong_codes_from_many_sessions_never_pass_the_share_cap,
    a_right_code_in_a_burst_of_wrong_ones_is_compared_only_within_the_five_tries,
    twenty_concurrent_right_codes_verify_exactly_once
);
