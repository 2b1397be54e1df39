//! Share links and download grants (seed 001's ShareAccessTest, and the session rules around it):
//! the token only identifies a share; a download needs a grant earned with a verified code on this
//! session, for this share, while the link, the session and the grant are all still alive.

use std::time::Duration;

use sha2::{Digest, Sha256};
use watasu::{
    accounts::EmailAddress,
    db::Db,
    i18n::Lang,
    on_db,
    otp::CodeOutcome,
    session::Session,
    share::{
        NewFile, NewHandover, Share, ShareError,
        create::{CreateError, HandoverRequest, create_handover},
    },
    storage::StoredFile,
};

use crate::{
    both_backends,
    support::{Backend, TestApp, count},
};

/// Reads one text column of one row (`… WHERE id = $1`).
async fn text(db: &Db, sql: &'static str, id: i64) -> String {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.unwrap())
}

/// A live session, as the session middleware would hand it to a handler.
async fn new_session(app: &TestApp) -> Session {
    app.state.sessions.create().await.unwrap().session
}

/// Opens the share and grants it to the session after a successful code check.
async fn open_and_grant(app: &TestApp, token: &str, session: &Session) -> Share {
    let share = app.state.shares.open(token).await.unwrap();
    app.state.shares.grant_after_verification(&share, session.id, &CodeOutcome::Verified).await.unwrap();
    share
}

async fn grant_rows(app: &TestApp, share_id: i64) -> i64 {
    count(app.db(), "SELECT count(*) FROM download_grants WHERE share_id = $1", share_id).await
}

fn is_lower_hex_64(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Everything `ShareLinks::issue` needs, for a file that is notionally already stored.
fn new_share(sender_id: i64, ttl: Duration) -> NewHandover {
    let stored = StoredFile {
        key: watasu::secret::random_token().expose().to_owned(),
        size_bytes: 4,
        sha256: "0".repeat(64),
        crc32: 0,
        sealed: None,
    };
    NewHandover {
        sender_id,
        files: vec![NewFile {
            stored,
            name: "report.txt".to_owned(),
            content_type: "text/plain".to_owned(),
            upload_id: None,
        }],
        note: None,
        recipients: vec![EmailAddress::parse("recipient@example.test").unwrap()],
        message: String::new(),
        lang: Lang::En,
        ttl,
        notify_on_download: false,
        name_file_in_mail: true,
        scan: false,
        allow_reply: false,
    }
}

fn share_request(app: &TestApp, sender_id: i64, ttl: Duration) -> HandoverRequest<'_> {
    app.fake_share().content_type("text/plain").message("").quiet().ttl(ttl).request(sender_id)
}

fn stored_files(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.path().join("files"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

async fn the_stored_value_is_the_sha256_of_the_token_never_the_token(backend: Backend) {
    let app = TestApp::spawn(backend).await;

    let share = app.create_share().await;

    let stored = text(app.db(), "SELECT token_hash FROM shares WHERE id = $1", share.id).await;
    assert!(is_lower_hex_64(&share.token), "the token is not 64 lowercase hex: {:?}", share.token);
    assert_ne!(stored, share.token, "the raw token is in the database");
    assert_eq!(stored, hex::encode(Sha256::digest(share.token.as_bytes())));
}

async fn resolving_a_token_gives_the_registered_recipient_lower_cased(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await; // created for "Recipient@Example.test"

    let opened = app.state.shares.open(&share.token).await.unwrap();

    assert_eq!(opened.id, share.id);
    assert_eq!(opened.recipient_email, "recipient@example.test");
}

async fn an_expired_token_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    assert!(app.state.shares.open(&share.token).await.is_ok(), "the fresh share does not open");
    app.expire_share(share.id).await;

    let opened = app.state.shares.open(&share.token).await;

    assert!(matches!(opened, Err(ShareError::NotAvailable)), "{opened:?}");
}

async fn a_well_formed_token_that_was_never_issued_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_share().await;
    let unknown = watasu::secret::random_token();

    let opened = app.state.shares.open(unknown.expose()).await;

    assert!(matches!(opened, Err(ShareError::NotAvailable)), "{opened:?}");
}

async fn a_valid_token_without_a_grant_does_not_authorise_a_download(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = new_session(&app).await;

    let opened = app.state.shares.open(&share.token).await.unwrap();
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session)).await;

    assert_eq!(opened.id, share.id, "the token itself is valid");
    assert!(matches!(authorised, Err(ShareError::NotGranted)), "{authorised:?}");
}

async fn after_a_grant_the_download_is_authorised_for_the_shares_own_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = new_session(&app).await;
    let handover_id = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", share.id).await;

    open_and_grant(&app, &share.token, &session).await;
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session)).await.unwrap();

    assert_eq!(authorised.id, share.id);
    assert_eq!(authorised.handover_id, handover_id);
}

async fn a_grant_needs_a_successful_verification(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = new_session(&app).await;
    let opened = app.state.shares.open(&share.token).await.unwrap();
    let failures = [
        CodeOutcome::Wrong { tries_left: 4 },
        CodeOutcome::Wrong { tries_left: 0 },
        CodeOutcome::NoLiveCode,
        CodeOutcome::Malformed,
        CodeOutcome::Locked { now: true },
        CodeOutcome::Locked { now: false },
    ];

    for outcome in failures {
        let granted = app.state.shares.grant_after_verification(&opened, session.id, &outcome).await;
        assert!(matches!(granted, Err(ShareError::NotVerified)), "{outcome:?} gave {granted:?}");
    }

    assert_eq!(grant_rows(&app, share.id).await, 0, "a failed verification wrote a grant");
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session)).await;
    assert!(matches!(authorised, Err(ShareError::NotGranted)), "{authorised:?}");
}

async fn a_grant_for_one_share_does_not_authorise_another(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let a = app.create_share().await;
    let b = app.create_share().await;
    let session = new_session(&app).await;

    open_and_grant(&app, &a.token, &session).await;
    let other = app.state.shares.authorize_download(&b.token, Some(&session)).await;

    assert!(matches!(other, Err(ShareError::NotGranted)), "{other:?}");
    assert_eq!(app.state.shares.authorize_download(&a.token, Some(&session)).await.unwrap().id, a.id);
}

async fn a_grant_belongs_to_the_session_that_earned_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let verified = new_session(&app).await;
    let other = new_session(&app).await;

    open_and_grant(&app, &share.token, &verified).await;
    let elsewhere = app.state.shares.authorize_download(&share.token, Some(&other)).await;
    let sessionless = app.state.shares.authorize_download(&share.token, None).await;

    assert!(matches!(elsewhere, Err(ShareError::NotGranted)), "{elsewhere:?}");
    assert!(matches!(sessionless, Err(ShareError::NotGranted)), "{sessionless:?}");
}

async fn an_expired_token_is_rejected_even_after_a_grant(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = new_session(&app).await;
    open_and_grant(&app, &share.token, &session).await;
    assert!(app.state.shares.authorize_download(&share.token, Some(&session)).await.is_ok());

    app.expire_share(share.id).await;
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session)).await;

    assert!(matches!(authorised, Err(ShareError::NotAvailable)), "{authorised:?}");
}

async fn a_share_must_live_at_least_one_minute_and_a_refused_one_leaves_nothing_behind(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;

    for ttl in [Duration::ZERO, Duration::from_secs(59)] {
        let issued = app.state.shares.links.issue(&new_share(sender, ttl)).await;
        assert!(matches!(issued, Err(ShareError::TtlTooShort)), "issue with {ttl:?} gave {issued:?}");

        let created =
            create_handover(&app.state.shares.links, app.state.store.as_ref(), share_request(&app, sender, ttl)).await;
        assert!(matches!(created, Err(CreateError::TtlTooShort)), "create_handover with {ttl:?} gave {created:?}");
    }

    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE sender_id = $1", sender).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1", sender).await, 0);
    assert_eq!(stored_files(&app), Vec::<String>::new(), "a refused share left a file in the store");
    // The boundary itself is allowed.
    let minute = Duration::from_secs(60);
    assert!(app.state.shares.links.issue(&new_share(sender, minute)).await.is_ok());
    let created =
        create_handover(&app.state.shares.links, app.state.store.as_ref(), share_request(&app, sender, minute)).await;
    assert!(created.is_ok(), "{created:?}");
}

async fn a_malformed_token_is_rejected_before_any_lookup(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = new_session(&app).await;
    let cases = [
        ("traversal", "../../etc/passwd".to_owned()),
        ("too short", "abcdef".to_owned()),
        ("too long", "a".repeat(65)),
        ("uppercase", "A".repeat(64)),
        ("not hex", "g".repeat(64)),
        ("empty", String::new()),
    ];

    for (name, token) in &cases {
        let opened = app.state.shares.open(token).await;
        assert!(matches!(opened, Err(ShareError::Malformed)), "{name}: open gave {opened:?}");
        let authorised = app.state.shares.authorize_download(token, Some(&session)).await;
        assert!(matches!(authorised, Err(ShareError::Malformed)), "{name}: authorize gave {authorised:?}");
    }
}

async fn a_grant_dies_with_its_session(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = new_session(&app).await;
    open_and_grant(&app, &share.token, &session).await;
    assert!(app.state.shares.authorize_download(&share.token, Some(&session)).await.is_ok());

    app.state.sessions.end(session.id).await.unwrap();
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session)).await;

    assert!(matches!(authorised, Err(ShareError::NotGranted)), "{authorised:?}");
    assert_eq!(grant_rows(&app, share.id).await, 0, "the grant outlived its session");
}

async fn a_grant_survives_regeneration_while_the_old_cookie_stops_working(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let first = app.state.sessions.create().await.unwrap();
    open_and_grant(&app, &share.token, &first.session).await;

    let renewed = app.state.sessions.regenerate(first.session.id).await.unwrap().expect("the session is live");

    assert_eq!(renewed.session.id, first.session.id, "regeneration moved the session to another row");
    assert!(app.state.sessions.load(first.cookie_value.expose()).await.unwrap().is_none(), "the old cookie works");
    let loaded = app.state.sessions.load(renewed.cookie_value.expose()).await.unwrap().expect("new cookie");
    let authorised = app.state.shares.authorize_download(&share.token, Some(&loaded)).await;
    assert_eq!(authorised.unwrap().id, share.id);
}

async fn a_grant_expires_on_its_own_even_while_link_and_session_live(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let session = app.state.sessions.create().await.unwrap();
    open_and_grant(&app, &share.token, &session.session).await;
    assert!(app.state.shares.authorize_download(&share.token, Some(&session.session)).await.is_ok());

    let moved = app.set_ago("download_grants", &["expires_at"], 1, &format!("share_id = {}", share.id)).await;
    let authorised = app.state.shares.authorize_download(&share.token, Some(&session.session)).await;

    assert_eq!(moved, 1);
    assert!(matches!(authorised, Err(ShareError::NotGranted)), "{authorised:?}");
    assert!(app.state.sessions.load(session.cookie_value.expose()).await.unwrap().is_some(), "session ended");
    assert!(app.state.shares.open(&share.token).await.is_ok(), "the link expired instead");
}

async fn a_request_that_loaded_the_session_before_verification_gets_no_grant(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let first = app.state.sessions.create().await.unwrap();
    // A request in flight: its session was loaded from the cookie before the code was verified.
    let in_flight = app.state.sessions.load(first.cookie_value.expose()).await.unwrap().expect("a live session");

    let renewed = app.state.sessions.regenerate(first.session.id).await.unwrap().expect("the session is live");
    open_and_grant(&app, &share.token, &renewed.session).await;

    let stale = app.state.shares.authorize_download(&share.token, Some(&in_flight)).await;
    let current = app.state.shares.authorize_download(&share.token, Some(&renewed.session)).await;
    assert!(matches!(stale, Err(ShareError::NotGranted)), "the pre-verification cookie was granted: {stale:?}");
    assert_eq!(current.unwrap().id, share.id);
}

both_backends!(
    the_stored_value_is_the_sha256_of_the_token_never_the_token,
    resolving_a_token_gives_the_registered_recipient_lower_cased,
    an_expired_token_is_rejected,
    a_well_formed_token_that_was_never_issued_is_rejected,
    a_valid_token_without_a_grant_does_not_authorise_a_download,
    after_a_grant_the_download_is_authorised_for_the_shares_own_file,
    a_grant_needs_a_successful_verification,
    a_grant_for_one_share_does_not_authorise_another,
    a_grant_belongs_to_the_session_that_earned_it,
    an_expired_token_is_rejected_even_after_a_grant,
    a_share_must_live_at_least_one_minute_and_a_refused_one_leaves_nothing_behind,
    a_malformed_token_is_rejected_before_any_lookup,
    a_grant_dies_with_its_session,
    a_grant_survives_regeneration_while_the_old_cookie_stops_working,
    a_grant_expires_on_its_own_even_while_link_and_session_live,
    a_request_that_loaded_the_session_before_verification_gets_no_grant
);
