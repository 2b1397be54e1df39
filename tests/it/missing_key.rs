//! A data folder whose `secret.key` is gone while the database holds what only that key opens:
//! no start, server or command, makes a new key over it; the one line printed says what to
//! restore or which command starts over knowingly; and an account whose authenticator app can no
//! longer be opened gets a page that says so, never a 500.

use std::{
    os::unix::fs::PermissionsExt,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use watasu::{
    accounts::second_factor::SecondFactors,
    db::Db,
    i18n::Lang,
    key_check::KeyedData,
    mail::{messages::invitation_mail, origin::MailOrigin, outbox::MailKind, outbox::Outbox},
    secret::{SecretKey, SecretString},
    webhooks::{EventType, repo::WebhookRepo, signing::WebhookSecret},
};

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp, count, execute, fresh_database, process::run_watasu, test_secret_key},
};
use watasu::sql;

/// Runs `watasu serve` on `common` until it exits; `None` when it was still serving after
/// `within` (it is then stopped).
fn serve_until_exit(common: &[&str], within: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(common)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting watasu");
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > within {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (code, stderr)
}

/// A mail waiting in the outbox, sealed with `key`.
async fn queue_a_mail(db: &Db, key: &SecretKey) {
    let origin = MailOrigin::new(
        "watasu <watasu@example.test>".parse().unwrap(),
        &"https://watasu.example.test/".parse().unwrap(),
    );
    let invitation =
        invitation_mail(&origin, "new@example.test", Lang::En, "https://watasu.example.test/join/x").unwrap();
    Outbox::new(db.clone(), key).enqueue(None, MailKind::Invitation, &invitation).await.unwrap();
}

fn watasu(args: &[&str], common: &[&str]) -> (i32, String, String) {
    let args = [args, common].concat();
    tokio::task::block_in_place(|| run_watasu(&args, &[]))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn a_missing_key_over_sealed_data_stops_every_start_until_it_is_restored_or_replaced_knowingly(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    db.migrate().await.unwrap();
    let key_file = dir.path().join("secret.key");
    let key = SecretKey::load_or_generate(&key_file).unwrap();
    queue_a_mail(&db, &key).await;
    db.close().await;
    let kept = std::fs::read(&key_file).unwrap();
    std::fs::remove_file(&key_file).unwrap();
    let common = ["--data-dir", dir.path().to_str().unwrap(), "--database-url", &url];

    let (code, stderr) = tokio::task::block_in_place(|| serve_until_exit(&common, Duration::from_secs(30)));
    assert_eq!(code, Some(1), "the server started without its key:\n{stderr}");
    let line = stderr.lines().last().unwrap_or_default();
    for said in ["secret.key is missing", "(1 waiting mail)", "restore it from your backup", "watasu secret-key new"] {
        assert!(line.starts_with("watasu: ") && line.contains(said), "{said:?} not in {line:?}");
    }
    assert!(!key_file.exists(), "a new key was made anyway");
    let (code, _, stderr) = watasu(&["share", "list"], &common);
    assert_eq!(code, 1, "a command ran without the key: {stderr}");
    assert!(stderr.contains("secret.key is missing"), "{stderr}");
    assert!(!key_file.exists());

    // The key restored: everything runs again.
    std::fs::write(&key_file, &kept).unwrap();
    let (code, _, stderr) = watasu(&["share", "list"], &common);
    assert_eq!(code, 0, "{stderr}");

    // Lost for good: a new key, made knowingly, says what it leaves behind.
    std::fs::remove_file(&key_file).unwrap();
    let (code, stdout, stderr) = watasu(&["secret-key", "new"], &common);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("made a new secret key") && stdout.contains("1 waiting mail"), "{stdout}");
    assert_eq!(mode(&key_file), 0o600);
    assert_ne!(std::fs::read(&key_file).unwrap(), kept);
    let (code, _, stderr) = watasu(&["secret-key", "new"], &common);
    assert_eq!(code, 2, "an existing key was replaced: {stderr}");
    let (code, _, stderr) = watasu(&["share", "list"], &common);
    assert_eq!(code, 0, "{stderr}");
}

async fn a_sign_in_whose_app_cannot_be_opened_gets_a_page_that_says_so(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let user = app.create_sender_with_password("sato@example.test", "Sender Sato", PASSWORD).await;
    // An app set up under the instance's earlier key, since replaced.
    let earlier = SecretKey::from_hex(&"c3".repeat(32)).unwrap();
    assert!(SecondFactors::new(app.db().clone(), &earlier).start_totp(user).await.unwrap());
    execute(app.db(), sql!("UPDATE totp_factors SET confirmed_at = " now " WHERE user_id = $1"), user).await;
    let browser = app.browser();
    let answer = browser.sign_in("sato@example.test", PASSWORD).await;
    assert_eq!(answer.header("location"), Some("/login/second-factor"), "{}", answer.body);

    let step = browser.get("/login/second-factor").await;
    let page = match step.status.as_u16() {
        200 => {
            browser.post_form("/login/second-factor", &[("csrf_token", &step.csrf_token()), ("code", "123456")]).await
        }
        _ => step,
    };

    assert_eq!(page.status, 409, "{}", page.body);
    assert_eq!(page.texts("h1"), [Lang::Ja.text().errors.factor_unreadable.title], "{}", page.body);
    assert!(!page.texts("a[href]").is_empty(), "no way back: {}", page.body);
    for leak in ["Unreadable", "TOTP", "does not open"] {
        assert!(!page.body.contains(leak), "the page leaks {leak:?}: {}", page.body);
    }
    app.stop().await;
}

/// Only a secret note and a webhook endpoint (no app, passkey, waiting mail or pending code):
/// still no start without the key, and the line names both.
async fn secret_notes_and_webhook_secrets_alone_stop_a_start_without_the_key(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let app = TestApp::spawn_on(tempfile::tempdir().unwrap(), &url, |_| {}).await;
    let sender = app.create_sender("sato@example.test", "Sender Sato").await;
    app.fake_share().sender(sender).note("door 4711").create().await;
    let key = SecretKey::from_hex(&test_secret_key()).unwrap();
    let secret = WebhookSecret::generate();
    WebhookRepo::new(app.db().clone(), &key)
        .insert(sender, false, "https://hooks.example.test/in", &EventType::CHOOSABLE, &secret)
        .await
        .unwrap();
    execute(app.db(), sql!("DELETE FROM mail_outbox WHERE id > $1"), 0).await;
    let held = KeyedData::count(app.db()).await.unwrap();
    assert_eq!(held, KeyedData { notes: 1, webhook_secrets: 1, ..KeyedData::default() });
    app.stop().await;

    let common = ["--data-dir", dir.path().to_str().unwrap(), "--database-url", &url];
    let (code, stderr) = tokio::task::block_in_place(|| serve_until_exit(&common, Duration::from_secs(30)));
    assert_eq!(code, Some(1), "the server started over notes and webhook secrets without its key:\n{stderr}");
    let line = stderr.lines().last().unwrap_or_default();
    assert!(line.contains("(1 secret note, 1 webhook endpoint secret)"), "{line:?}");
    assert!(!dir.path().join("secret.key").exists(), "a new key was made anyway");
}

/// A note sealed under a key this instance no longer has is refused before the claim, with a page
/// that says nothing was used up; once the key is back, the same link shows the note.
async fn a_note_under_a_lost_key_is_refused_unspent_and_opens_once_the_key_is_back(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let other_key = SecretString::new("c3".repeat(32));
    // Two instances one after the other, with the same file key (only the secret key differs).
    let file_key = || Some(SecretString::new("e5".repeat(32)));
    let wrong = TestApp::spawn_on(tempfile::tempdir().unwrap(), &url, |s| {
        s.secret_key = Some(other_key);
        s.file_key = file_key();
    })
    .await;
    // Sealed under the test key: the key this instance was started without.
    let share = wrong.fake_share().note("door 4711").create().await;
    let note_path = format!("/s/{}/note", share.token);
    let (browser, csrf) = wrong.verified_browser(&share).await;
    let refused = browser.post_form(&note_path, &[("csrf_token", &csrf)]).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.texts("h1"), [Lang::Ja.text().errors.note_unreadable.title], "{}", refused.body);
    assert!(!refused.body.contains("4711") && !refused.body.contains("secret key"), "{}", refused.body);
    let active = "SELECT count(*) FROM shares WHERE id = $1 AND status = 'active' AND claimed_session_id IS NULL";
    assert_eq!(count(wrong.db(), active, share.id).await, 1, "the claim was spent on a note that does not open");
    wrong.stop().await;

    let right = TestApp::spawn_on(tempfile::tempdir().unwrap(), &url, |s| s.file_key = file_key()).await;
    let (browser, csrf) = right.verified_browser(&share).await;
    assert_eq!(browser.post_form(&note_path, &[("csrf_token", &csrf)]).await.status, 303);
    let shown = browser.get(&note_path).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("door 4711"), "{}", shown.body);
    right.stop().await;
}

both_backends!(
    a_missing_key_over_sealed_data_stops_every_start_until_it_is_restored_or_replaced_knowingly,
    a_sign_in_whose_app_cannot_be_opened_gets_a_page_that_says_so,
    secret_notes_and_webhook_secrets_alone_stop_a_start_without_the_key,
    a_note_under_a_lost_key_is_refused_unspent_and_opens_once_the_key_is_back,
);
