//! The recipient's authentication events in the log of the real binary: each code requested,
//! wrong code, verification and lock names the share, the client and a session reference, and the
//! log never holds the code, the link token, a cookie value or the address.

use std::{
    collections::HashSet,
    path::Path,
    time::{Duration, Instant},
};

use crate::{
    both_backends,
    support::{
        Browser, fresh_database,
        process::{Server, run_watasu},
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
}
