//! A restored backup and `watasu deletion reapply`; the evidence and the real binary's log, which
//! must name no address, file name or token.

use std::{path::Path, process::Command, time::Duration};

use watasu::{
    accounts::{EmailAddress, Role, Users},
    db::Db,
    deletion::{CaseState, DeletionCases},
    on_db,
    share::{ShareLinks, ShareRepository, create},
    storage::LocalFileStore,
};

use super::fixtures::*;
use crate::{
    both_backends,
    support::{Backend, Browser, SmtpSink, TestApp, fresh_database, pg, process},
};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn run(command: &mut Command) {
    let output = command.output().expect("running a PostgreSQL tool");
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// Backs the database up the way an operator would: a consistent copy of the live SQLite file,
/// or pg_dump.
async fn back_up(app: &TestApp, backup: &Path) {
    match app.db() {
        Db::Sqlite(pool) => {
            let target = backup.join("watasu.db");
            let sql = sqlx::AssertSqlSafe(format!("VACUUM INTO '{}'", target.display()));
            sqlx::query(sql).execute(pool).await.unwrap();
        }
        Db::Postgres(_) => run(Command::new(Path::new(PG_BIN).join("pg_dump"))
            .args(["--no-owner", "-d", &app.state.config.database_url, "-f"])
            .arg(backup.join("dump.sql"))),
    }
}

/// Restores the backup into a new database; returns its URL.
async fn restore(backend: Backend, backup: &Path, restored: &Path) -> String {
    match backend {
        Backend::Sqlite => {
            std::fs::copy(backup.join("watasu.db"), restored.join("watasu.db")).unwrap();
            format!("sqlite://{}", restored.join("watasu.db").display())
        }
        Backend::Postgres => {
            let cluster = tokio::task::spawn_blocking(pg::shared).await.unwrap();
            let url = cluster.create_database().await;
            run(Command::new(Path::new(PG_BIN).join("psql"))
                .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", &url, "-f"])
                .arg(backup.join("dump.sql")));
            url
        }
    }
}

async fn a_restored_backup_plus_reapply_deletes_the_data_again(backend: Backend) {
    let app = deletion_app(backend).await;
    let sender = populate(&app, "leaving@example.test").await;
    let backup = tempfile::tempdir().unwrap();
    back_up(&app, backup.path()).await;
    copy_dir(&app.data_dir.path().join("files"), &backup.path().join("files"));
    let account = sender.browser.get("/account").await;
    let answer = sender
        .browser
        .post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)])
        .await;
    let reference = answer.texts(".case-reference").pop().expect("a case was opened");
    wait_for_state(&app, &reference, CaseState::Completed).await;
    assert_eq!(leftovers(&app, &sender).await, vec![]);

    // A new server from the backups, with the current journal (which a restore never rolls back).
    let restored = tempfile::tempdir().unwrap();
    let url = restore(backend, backup.path(), restored.path()).await;
    copy_dir(&backup.path().join("files"), &restored.path().join("files"));
    let journal = app.data_dir.path().join(watasu::deletion::journal::FILE_NAME);
    std::fs::copy(&journal, restored.path().join(watasu::deletion::journal::FILE_NAME)).unwrap();
    // So is the file key, which alone opens the encrypted files' keys.
    let file_key = watasu::key_check::FILE_KEY_FILE;
    std::fs::copy(app.data_dir.path().join(file_key), restored.path().join(file_key)).unwrap();
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    let files = restored.path().join("files");
    assert!(leftovers_in(&db, &files, &sender).await.len() > 5, "the backup does not hold the data");
    assert_eq!(crate::support::count(&db, "SELECT count(*) FROM deletion_cases WHERE id > $1", 0).await, 0);
    // The backup brought the keys of the encrypted files back with their rows.
    let restored_keys = crate::support::count(
        &db,
        "SELECT count(*) FROM files WHERE owner_id = $1 AND wrapped_key IS NOT NULL",
        sender.id,
    )
    .await;
    assert!(restored_keys > 0, "the backup holds no key");

    let dir = restored.path().to_str().unwrap();
    // The secret key is restored with the database, as the README's backup section says.
    let key = [("WATASU_SECRET_KEY", crate::support::test_secret_key())];
    let key: Vec<(&str, &str)> = key.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out, err) =
        process::run_watasu(&["deletion", "reapply", "--data-dir", dir, "--database-url", &url], &key);

    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&format!("{reference}: re-applied as DEL-")) && out.contains("(completed)"), "{out}");
    assert_eq!(leftovers_in(&db, &files, &sender).await, vec![], "the restored data is still there");
    let reapplied = DeletionCases::new(db.clone()).list(10).await.unwrap();
    assert_eq!(reapplied.len(), 1);
    assert_eq!(
        (reapplied[0].reapplies.as_deref(), reapplied[0].actor_role.code()),
        (Some(reference.as_str()), "operator")
    );
    // Destroyed again, as a verified step of its own.
    let steps = DeletionCases::new(db.clone()).steps(reapplied[0].id).await.unwrap();
    let keys = steps.iter().find(|s| s.store == watasu::deletion::Store::FileKeys).expect("a file keys step");
    assert_eq!((keys.found, keys.remaining), (Some(restored_keys), Some(0)), "{keys:?}");
    assert!(keys.verified_at.is_some());
    let (_, again, _) = process::run_watasu(&["deletion", "reapply", "--data-dir", dir, "--database-url", &url], &key);
    assert!(again.contains("re-applied 0 case(s)"), "a second reapply found something: {again}");
    let (_, listed, _) = process::run_watasu(&["deletion", "list", "--data-dir", dir, "--database-url", &url], &key);
    assert!(listed.contains(&reapplied[0].reference) && listed.contains("completed"), "{listed}");
    let journal = std::fs::read_to_string(restored.path().join(watasu::deletion::journal::FILE_NAME)).unwrap();
    assert!(!journal.contains(&sender.email) && !journal.contains('@'), "{journal}");
    db.close().await;
}

async fn the_evidence_and_the_log_name_no_address_file_name_or_token(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let smtp = SmtpSink::start().await;
    let url = fresh_database(backend, dir.path()).await;
    let (data, smtp_url, key) = (dir.path().to_owned(), smtp.url(), crate::support::test_secret_key());
    let extra = ["--database-url", &url, "--smtp-url", &smtp_url, "--secret-key", &key];
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let server = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = extra.iter().map(String::as_str).collect();
        process::Server::start(&data, &args)
    })
    .await
    .unwrap();
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    let email = "secret-sender@example.test";
    let hash = watasu::accounts::password::hash_password(watasu::secret::SecretString::new(PASSWORD)).await.unwrap();
    let sender = Users::new(db.clone())
        .create(&EmailAddress::parse(email).unwrap(), "Sato", &hash, Role::Sender, Default::default())
        .await
        .unwrap();
    let store = LocalFileStore::new(dir.path().join("files")).unwrap();
    let links = ShareLinks::new(ShareRepository::new(db.clone()));
    let request = create::HandoverRequest {
        sender_id: sender,
        recipients: vec![EmailAddress::parse(RECIPIENT).unwrap()],
        files: vec![create::FileRequest {
            name: FILE_NAMES[0].to_owned(),
            content_type: "application/pdf".to_owned(),
            content: create::FileContent::Stream(Box::pin(&b"plans"[..])),
        }],
        note: None,
        max_bytes: 1 << 20,
        ttl: Duration::from_secs(3600),
        message: watasu::share::Message::parse("confidential").unwrap(),
        lang: watasu::i18n::Lang::En,
        notify_on_download: true,
        name_file_in_mail: true,
        scan: false,
        allow_reply: false,
    };
    let token = create::create_handover(&links, &store, request).await.unwrap().remove(0).token.expose().to_owned();
    let storage_key: String =
        on_db!(&db, |pool| sqlx::query_scalar("SELECT storage_key FROM files").fetch_one(pool).await.unwrap());
    let recipient = Browser::new(&server.base());
    let landing = recipient.get(&format!("/s/{token}")).await;
    recipient
        .post_form(&format!("/s/{token}/email"), &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)])
        .await;
    let browser = Browser::new(&server.base());
    let form = browser.get("/login").await;
    browser.post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", email), ("password", PASSWORD)]).await;
    let cookie = browser.cookie("watasu_session").expect("signed in");
    let account = browser.get("/account").await;

    let answer =
        browser.post_form("/account/delete", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;

    let reference = answer.texts(".case-reference").pop().expect("a case was opened");
    let cases = DeletionCases::new(db.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cases.find_by_reference(&reference).await.unwrap().unwrap().state() != CaseState::Completed {
        assert!(std::time::Instant::now() < deadline, "the case never completed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = server.log();
    assert!(log.contains(&reference) && log.contains("deletion step"), "the case left no trace in the log:\n{log}");
    let evidence = dump_evidence(&db).await;
    assert!(evidence.contains(&reference), "{evidence}");
    let journal = std::fs::read_to_string(dir.path().join(watasu::deletion::journal::FILE_NAME)).unwrap();
    let everything = dump_all(&db).await;
    for secret in [email, FILE_NAMES[0], &token, &cookie, &storage_key] {
        assert!(!log.contains(secret), "the log names {secret:?}");
        assert!(!evidence.contains(secret), "the evidence names {secret:?}");
        assert!(!journal.contains(secret), "the journal names {secret:?}");
    }
    assert!(!everything.contains(email), "the address survived in the database");
    db.close().await;
}

both_backends!(
    a_restored_backup_plus_reapply_deletes_the_data_again,
    the_evidence_and_the_log_name_no_address_file_name_or_token
);
