//! Authentication events in the log of the real binary. The recipient's: each code requested,
//! wrong code, verification and lock names the share, the client and a session reference, and the
//! log never holds the code, the link token, a cookie value or the address. The sender's: a
//! password sign-in, a passkey added, a passkey refused and a passkey sign-in name the account (where
//! known) and the client, never the password, the passkey's answer or a cookie value. The second
//! factor's set-up, codes and removal, and single sign-on's start, account, sign-in and refusal do
//! the same, never holding the app's key, a code, a recovery code, the client secret or the
//! provider's code and state; the redirect URI to register is printed at start-up.

use std::{
    collections::HashSet,
    path::Path,
    time::{Duration, Instant},
};

use crate::{
    both_backends,
    second_factor::{code as totp_code, room_in_this_step},
    support::{
        Backend, Browser,
        authenticator::SoftPasskey,
        fresh_database,
        oidc::{CLIENT_ID, CLIENT_SECRET, Consent, Mode, OidcProvider, drive},
        process::{Server, free_local_addr, run_watasu},
        smtp::ReceivedMail,
    },
};

use crate::support::RECIPIENT;

fn outbox(data_dir: &Path) -> HashSet<std::path::PathBuf> {
    std::fs::read_dir(data_dir.join("dev-mail")).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
}

/// The code in the first mail written to the outbox that is not in `before`.
async fn code_mailed_after(data_dir: &Path, before: &HashSet<std::path::PathBuf>) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for path in outbox(data_dir).difference(before) {
            let data = std::fs::read_to_string(path).unwrap_or_default();
            if let Some(code) = (ReceivedMail { to: vec![RECIPIENT.to_owned()], data }).code() {
                return code;
            }
        }
        assert!(Instant::now() < deadline, "no code mail in the outbox");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks that each event has a line naming `fields`.
fn assert_events(log: &str, events: &[(&str, &[&str])]) {
    for (event, fields) in events {
        let line = log.lines().find(|l| l.contains(event)).unwrap_or_else(|| panic!("no {event:?} in:\n{log}"));
        for field in *fields {
            assert!(line.contains(field), "{event:?} lacks {field}: {line}");
        }
    }
}

/// A sender made with `user add`, its password, and a fresh database for `backend`.
async fn sender_with_password(backend: crate::support::Backend, dir: &Path) -> (String, String) {
    let url = fresh_database(backend, dir).await;
    let add = [
        "user",
        "add",
        "--email",
        "sender@example.test",
        "--name",
        "Sato",
        "--data-dir",
        dir.to_str().unwrap(),
        "--database-url",
        &url,
    ];
    let (code, stdout, stderr) = run_watasu(&add, &[]);
    assert_eq!(code, 0, "{stderr}");
    (url, stdout.split("password (shown once): ").nth(1).unwrap().trim().to_owned())
}

async fn code_events_are_logged_with_share_client_and_session_and_nothing_secret(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let common = ["--data-dir", data_dir, "--database-url", &url];
    let (code, _, stderr) =
        run_watasu(&[&["user", "add", "--email", "sender@example.test", "--name", "Sato"][..], &common].concat(), &[]);
    assert_eq!(code, 0, "{stderr}");
    let file = dir.path().join("report.txt");
    std::fs::write(&file, b"contents").unwrap();
    let create = [
        &["share", "create", "--from", "sender@example.test", "--to", RECIPIENT, "--file", file.to_str().unwrap()][..],
        &common,
    ]
    .concat();
    let (code, stdout, stderr) = run_watasu(&create, &[]);
    assert_eq!(code, 0, "{stderr}");
    let token = stdout.split("/s/").nth(1).unwrap()[..64].to_owned();
    let server = Server::start(dir.path(), &["--database-url", &url]);
    let browser = Browser::new(&server.base());
    let path = format!("/s/{token}");

    let landing = browser.get(&path).await;
    let before = outbox(dir.path());
    let asked = browser
        .post_form(&format!("{path}/email"), &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)])
        .await;
    let code_step = browser.follow(&token, asked).await;
    let code = code_mailed_after(dir.path(), &before).await;
    let cookie_before = browser.cookie("watasu_session").unwrap();
    let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
    browser.post_form(&format!("{path}/code"), &[("csrf_token", &code_step.csrf_token()), ("code", &wrong)]).await;
    let verified =
        browser.post_form(&format!("{path}/code"), &[("csrf_token", &code_step.csrf_token()), ("code", &code)]).await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    server.wait_for_log("code verified", Duration::from_secs(10));

    let log = server.log();
    for event in ["code requested", "wrong code", "code verified"] {
        let line = log.lines().find(|l| l.contains(event)).unwrap_or_else(|| panic!("no {event:?} in:\n{log}"));
        for field in ["share_id=", "client=", "session="] {
            assert!(line.contains(field), "{event:?} lacks {field}: {line}");
        }
    }
    let cookie_after = browser.cookie("watasu_session").unwrap();
    for (what, secret) in [
        ("code", code.as_str()),
        ("token", &token),
        ("address", RECIPIENT),
        ("old cookie", &cookie_before),
        ("new cookie", &cookie_after),
    ] {
        assert!(!log.contains(secret), "the log holds the {what}:\n{log}");
    }
}

async fn sender_sign_in_events_are_logged_with_account_and_client_and_nothing_secret(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, password) = sender_with_password(backend, dir.path()).await;
    let addr = free_local_addr();
    let origin = format!("http://localhost:{}", addr.rsplit(':').next().unwrap());
    let server = Server::start_on(&addr, dir.path(), &["--database-url", &url, "--base-url", &format!("{origin}/")]);
    let browser = Browser::new(&server.base());

    assert_eq!(browser.sign_in("sender@example.test", &password).await.status, 303);
    let account = browser.get("/account").await;
    let options = browser
        .post_form(
            "/account/passkeys/options",
            &[("csrf_token", &account.csrf_token()), ("name", "Phone"), ("password", &password)],
        )
        .await;
    let mut key = SoftPasskey::new();
    let added = key.register(&serde_json::from_str(&options.body).unwrap(), &origin);
    let done = browser
        .post_form(
            "/account/passkeys",
            &[("csrf_token", &account.csrf_token()), ("name", "Phone"), ("credential", &added)],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let mut answers = vec![added];
    for page_origin in ["https://evil.example", origin.as_str()] {
        let laptop = Browser::new(&server.base());
        let login = laptop.get("/login").await;
        let options = laptop.post_form("/login/passkey/options", &[("csrf_token", &login.csrf_token())]).await;
        let answer = key.sign_in(&serde_json::from_str(&options.body).unwrap(), page_origin);
        laptop.post_form("/login/passkey", &[("csrf_token", &login.csrf_token()), ("credential", &answer)]).await;
        answers.push(answer);
    }
    server.wait_for_log("signed in with a passkey", Duration::from_secs(10));

    let log = server.log();
    let known: &[&str] = &["account_id=", "client="];
    assert_events(
        &log,
        &[
            ("signed in with a password alone", known),
            ("passkey registered", known),
            ("passkey sign-in refused", &["client="]),
            ("signed in with a passkey", known),
        ],
    );
    let cookie = browser.cookie("watasu_session").unwrap();
    assert!(!log.contains(&password), "the log holds the password:\n{log}");
    assert!(!log.contains(&cookie), "the log holds a cookie:\n{log}");
    for answer in &answers {
        let value: serde_json::Value = serde_json::from_str(answer).unwrap();
        for part in ["clientDataJSON", "attestationObject", "signature"] {
            if let Some(secret) = value["response"][part].as_str() {
                assert!(!log.contains(secret), "the log holds the answer's {part}:\n{log}");
            }
        }
    }
}

async fn second_factor_events_are_logged_with_account_and_client_and_nothing_secret(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, password) = sender_with_password(backend, dir.path()).await;
    let server = Server::start(dir.path(), &["--database-url", &url]);
    let phone = Browser::new(&server.base());
    assert_eq!(phone.sign_in("sender@example.test", &password).await.status, 303);

    let account = phone.get("/account").await;
    let started =
        phone.post_form("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", &password)]).await;
    assert_eq!(started.header("location"), Some("/account/totp"), "{}", started.body);
    let setup = phone.get("/account/totp").await;
    let key = setup.texts("[data-totp-secret]").pop().unwrap().replace(' ', "");
    let secret = totp_rs::Secret::try_from_base32(&key).unwrap().as_bytes().to_vec();
    room_in_this_step().await;
    let first = totp_code(&secret, 0);
    let csrf = setup.csrf_token();
    let fields = [("csrf_token", csrf.as_str()), ("code", first.as_str()), ("password", password.as_str())];
    let done = phone.post_form("/account/totp/confirm", &fields).await;
    let recovery_codes = done.texts("[data-recovery-codes] code");
    assert_eq!(recovery_codes.len(), 10, "{}", done.body);
    let laptop = Browser::new(&server.base());
    assert_eq!(laptop.sign_in("sender@example.test", &password).await.header("location"), Some("/login/second-factor"));
    let step = laptop.get("/login/second-factor").await;
    let wrong = totp_code(&secret, 5);
    laptop.post_form("/login/second-factor", &[("csrf_token", &step.csrf_token()), ("code", &wrong)]).await;
    room_in_this_step().await;
    let next = totp_code(&secret, 1);
    let passed = laptop.post_form("/login/second-factor", &[("csrf_token", &step.csrf_token()), ("code", &next)]).await;
    assert_eq!(passed.header("location"), Some("/shares"), "{}", passed.body);
    let account = laptop.get("/account").await;
    laptop.post_form("/account/totp/remove", &[("csrf_token", &account.csrf_token()), ("password", &password)]).await;
    server.wait_for_log("TOTP removed", Duration::from_secs(10));

    let log = server.log();
    let known: &[&str] = &["account_id=", "client="];
    assert_events(
        &log,
        &[
            ("TOTP set-up started", known),
            ("TOTP enrolled", known),
            ("second factor failed", known),
            ("second factor passed", known),
            ("TOTP removed", known),
        ],
    );
    assert!(!log.contains(&password), "the log holds the password:\n{log}");
    assert!(!log.to_lowercase().contains(&key.to_lowercase()), "the log holds the app's key:\n{log}");
    for code in &recovery_codes {
        assert!(
            !log.contains(code.as_str()) && !log.contains(&code.replace('-', "")),
            "the log holds a recovery code:\n{log}"
        );
    }
    // Six digits could turn up in a timestamp by chance: only the factor's own lines are read.
    for line in log.lines().filter(|l| l.contains("TOTP") || l.contains("second factor")) {
        for code in [&first, &wrong, &next] {
            assert!(!line.contains(code.as_str()), "a line holds a code: {line}");
        }
    }
}

async fn single_sign_on_events_are_logged_with_account_and_client_and_nothing_secret(backend: Backend) {
    let provider = tokio::task::spawn_blocking(|| OidcProvider::start(Mode::Normal)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let addr = free_local_addr();
    let base = format!("http://{addr}/");
    let issuer = provider.issuer();
    let sso = [
        "--oidc-issuer",
        &issuer,
        "--oidc-client-id",
        CLIENT_ID,
        "--oidc-client-secret",
        CLIENT_SECRET,
        "--oidc-allowed-domains",
        "corp.test",
    ];
    let server =
        Server::start_on(&addr, dir.path(), &[&["--database-url", &url, "--base-url", &base][..], &sso].concat());
    let redirect_uri = format!("http://{addr}/login/sso/callback");
    assert!(
        server.log().lines().any(|l| l.contains("register this redirect URI") && l.contains(&redirect_uri)),
        "{}",
        server.log()
    );
    provider.register(&redirect_uri).await;

    let param = |callback: &str, name: &str| {
        callback.split(&format!("{name}=")).nth(1).unwrap().split('&').next().unwrap().to_owned()
    };
    let browser = Browser::new(&server.base());
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;
    assert_eq!(browser.get(&callback).await.header("location"), Some("/shares"));
    let stranger = Browser::new(&server.base());
    let theirs = drive(&stranger, "bob@corp.test", Consent::Allow).await;
    let forged = theirs.replace(&param(&theirs, "state"), &"ab".repeat(32));
    assert_eq!(stranger.get(&forged).await.status, 400);
    server.wait_for_log("single sign-on refused", Duration::from_secs(10));

    let log = server.log();
    let known: &[&str] = &["account_id=", "client="];
    assert_events(
        &log,
        &[
            ("single sign-on started", &["client="]),
            ("account created by single sign-on", known),
            ("signed in by single sign-on", known),
            ("single sign-on refused", &["client=", "unknown_state"]),
        ],
    );
    let mut secrets = vec![CLIENT_SECRET.to_owned(), browser.cookie("watasu_session").unwrap()];
    for callback in [&callback, &theirs] {
        secrets.extend([param(callback, "code"), param(callback, "state")]);
    }
    for secret in &secrets {
        assert!(!log.contains(secret.as_str()), "the log holds {secret:?}:\n{log}");
    }
}

both_backends!(
    code_events_are_logged_with_share_client_and_session_and_nothing_secret,
    sender_sign_in_events_are_logged_with_account_and_client_and_nothing_secret,
    second_factor_events_are_logged_with_account_and_client_and_nothing_secret,
    single_sign_on_events_are_logged_with_account_and_client_and_nothing_secret
);
