//! Authentication events in the log of the real binary. The recipient's: each code requested,
//! wrong code, verification and lock names the share, the client and a session reference, and the
//! log never holds the code, the link token, a cookie value or the address. The sender's: a
//! password sign-in, a passkey added, a passkey refused and a passkey sign-in name the account (where
//! known) and the client, never the password, the passkey's answer or a cookie value.

use std::{
    collections::HashSet,
    path::Path,
    time::{Duration, Instant},
};

use crate::{
    both_backends,
    support::{
        Browser,
        authenticator::SoftPasskey,
        fresh_database,
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

both_backends! {
    async fn code_events_are_logged_with_share_client_and_session_and_nothing_secret(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap();
        let url = fresh_database(backend, dir.path()).await;
        let common = ["--data-dir", data_dir, "--database-url", &url];
        let (code, _, stderr) = run_watasu(&[&["user", "add", "--email", "sender@example.test", "--name", "Sato"][..], &common].concat(), &[]);
        assert_eq!(code, 0, "{stderr}");
        let file = dir.path().join("report.txt");
        std::fs::write(&file, b"contents").unwrap();
        let create = [&["share", "create", "--from", "sender@example.test", "--to", RECIPIENT, "--file", file.to_str().unwrap()][..], &common].concat();
        let (code, stdout, stderr) = run_watasu(&create, &[]);
        assert_eq!(code, 0, "{stderr}");
        let token = stdout.split("/s/").nth(1).unwrap()[..64].to_owned();
        let server = Server::start(dir.path(), &["--database-url", &url]);
        let browser = Browser::new(&server.base());
        let path = format!("/s/{token}");

        let landing = browser.get(&path).await;
        let before = outbox(dir.path());
        let asked = browser.post_form(&format!("{path}/email"), &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)]).await;
        let code_step = browser.follow(&token, asked).await;
        let code = code_mailed_after(dir.path(), &before).await;
        let cookie_before = browser.cookie("watasu_session").unwrap();
        let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        browser.post_form(&format!("{path}/code"), &[("csrf_token", &code_step.csrf_token()), ("code", &wrong)]).await;
        let verified = browser.post_form(&format!("{path}/code"), &[("csrf_token", &code_step.csrf_token()), ("code", &code)]).await;
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
        for (what, secret) in [("code", code.as_str()), ("token", &token), ("address", RECIPIENT), ("old cookie", &cookie_before), ("new cookie", &cookie_after)] {
            assert!(!log.contains(secret), "the log holds the {what}:\n{log}");
        }
    }

    async fn sender_sign_in_events_are_logged_with_account_and_client_and_nothing_secret(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let url = fresh_database(backend, dir.path()).await;
        let add = ["user", "add", "--email", "sender@example.test", "--name", "Sato", "--data-dir", dir.path().to_str().unwrap(), "--database-url", &url];
        let (code, stdout, stderr) = run_watasu(&add, &[]);
        assert_eq!(code, 0, "{stderr}");
        let password = stdout.split("password (shown once): ").nth(1).unwrap().trim().to_owned();
        let addr = free_local_addr();
        let origin = format!("http://localhost:{}", addr.rsplit(':').next().unwrap());
        let server = Server::start_on(&addr, dir.path(), &["--database-url", &url, "--base-url", &format!("{origin}/")]);
        let browser = Browser::new(&server.base());

        assert_eq!(browser.sign_in("sender@example.test", &password).await.status, 303);
        let account = browser.get("/account").await;
        let options = browser.post_form("/account/passkeys/options", &[("csrf_token", &account.csrf_token()), ("name", "Phone"), ("password", &password)]).await;
        let mut key = SoftPasskey::new();
        let added = key.register(&serde_json::from_str(&options.body).unwrap(), &origin);
        let done = browser.post_form("/account/passkeys", &[("csrf_token", &account.csrf_token()), ("name", "Phone"), ("credential", &added)]).await;
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
        for event in ["signed in with a password alone", "passkey registered", "passkey sign-in refused", "signed in with a passkey"] {
            let line = log.lines().find(|l| l.contains(event)).unwrap_or_else(|| panic!("no {event:?} in:\n{log}"));
            let fields: &[&str] = if event.contains("refused") { &["client="] } else { &["account_id=", "client="] };
            for field in fields {
                assert!(line.contains(field), "{event:?} lacks {field}: {line}");
            }
        }
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
}
