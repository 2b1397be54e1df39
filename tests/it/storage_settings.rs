//! WATASU_STORAGE through the real binary: a bucket that works serves and stores there, and every
//! way of naming a store that cannot work stops start-up with one line naming the setting.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use watasu::storage::object_store::PART_BYTES;

use crate::{
    both_backends,
    support::{
        Backend, TestApp,
        installation::Installation,
        process::{free_local_addr, unanswered_local_addr},
        s3::{S3Server, shared},
    },
};

const WRONG_SECRET: &str = "hunter2-not-the-secret";

/// `args` with the value after `flag` replaced.
fn with(mut args: Vec<String>, flag: &str, value: &str) -> Vec<String> {
    let at = args.iter().position(|a| a == flag).expect("the flag is there") + 1;
    args[at] = value.to_owned();
    args
}

/// `watasu serve` that must stop on its own: exit code and everything it wrote.
fn serve_must_stop(install: &Installation, storage: &[String]) -> (Option<i32>, String) {
    let addr = free_local_addr();
    let mut child = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["serve", "--listen", &addr, "--data-dir", install.dir.path().to_str().unwrap()])
        .args(["--database-url", &install.url, "--secret-key", &crate::support::test_secret_key()])
        .args(storage)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting watasu");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

/// The one line a refused start-up ends with: it names `setting`, tells no causes' stack and no
/// secret.
fn assert_refused(install: &Installation, storage: &[String], code: i32, setting: &str) -> String {
    let (exit, output) = tokio::task::block_in_place(|| serve_must_stop(install, storage));
    assert_eq!(exit, Some(code), "{output}");
    let last = output.lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with(&format!("watasu: invalid value for {setting}: ")), "{output}");
    assert!(!output.contains("watasu is serving"), "{output}");
    for leaked in [WRONG_SECRET, "watasu-test-secret", "Caused by", "Error performing"] {
        assert!(!output.contains(leaked), "{leaked:?} in {output}");
    }
    last
}

async fn a_bucket_that_answers_holds_the_files_of_serve_and_of_the_cli(backend: Backend) {
    let install = Installation::new(backend).await;
    let s3 = shared();
    let bucket = s3.create_bucket();
    let storage = s3.serve_args(&bucket);
    let storage: Vec<&str> = storage.iter().map(String::as_str).collect();
    let server = install.start(&storage);
    let ready = reqwest::get(format!("{}/readyz", server.base())).await.unwrap();
    assert_eq!(ready.status(), 200);

    install.add_sender("sato@example.test");
    let upload = install.dir.path().join("report.txt");
    std::fs::write(&upload, b"the file contents\n").unwrap();
    let mut args = vec!["share", "create", "--from", "sato@example.test", "--to", "r@example.test"];
    args.extend(["--file", upload.to_str().unwrap()]);
    args.extend(&storage);
    install.run(&args);
    let stored: Vec<_> = std::fs::read_dir(s3.bucket_dir(&bucket).join("files")).unwrap().flatten().collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(std::fs::read(stored[0].path()).unwrap(), b"the file contents\n");
    assert!(!install.files_dir().exists() || std::fs::read_dir(install.files_dir()).unwrap().next().is_none());
    drop(server);
}

async fn uploads_sent_unsigned_are_stored_as_sent_in_parts(backend: Backend) {
    let install = Installation::new(backend).await;
    let s3 = shared();
    let bucket = s3.create_bucket();
    let mut storage = s3.serve_args(&bucket);
    storage.extend(["--aws-unsigned-payload".to_owned(), "true".to_owned()]);
    install.add_sender("sato@example.test");
    let upload = install.dir.path().join("large.bin");
    // One byte past a part: a multipart upload of two parts.
    let contents: Vec<u8> = (0..PART_BYTES + 1).map(|i| (i % 251) as u8).collect();
    std::fs::write(&upload, &contents).unwrap();
    let mut args = vec!["share", "create", "--from", "sato@example.test", "--to", "r@example.test"];
    args.extend(["--file", upload.to_str().unwrap()]);
    args.extend(storage.iter().map(String::as_str));
    install.run(&args);

    let stored: Vec<_> = std::fs::read_dir(s3.bucket_dir(&bucket).join("files")).unwrap().flatten().collect();
    let stored: Vec<_> = stored.iter().filter(|entry| entry.path().is_file()).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(std::fs::read(stored[0].path()).unwrap() == contents, "the stored object differs from the file");
}

async fn a_store_that_cannot_work_stops_start_up_with_one_line_naming_the_setting(backend: Backend) {
    let install = Installation::new(backend).await;
    let s3 = shared();
    let good = s3.serve_args(&s3.create_bucket());

    let line = assert_refused(&install, &with(good.clone(), "--storage", "gs://files"), 2, "WATASU_STORAGE");
    assert!(line.contains("s3://BUCKET"), "{line}");
    let line =
        assert_refused(&install, &with(good.clone(), "--storage", "s3://no-such-bucket/files"), 1, "WATASU_STORAGE");
    assert!(line.contains("\"no-such-bucket\" does not exist"), "{line}");
    let line =
        assert_refused(&install, &with(good.clone(), "--aws-secret-access-key", WRONG_SECRET), 1, "AWS_ACCESS_KEY_ID");
    assert!(line.contains("refuses these credentials"), "{line}");
    let nobody = format!("http://{}", unanswered_local_addr());
    let line = assert_refused(&install, &with(good, "--aws-endpoint-url", &nobody), 1, "AWS_ENDPOINT_URL");
    assert!(line.contains(&format!("the store at {nobody} does not answer")), "{line}");
}

async fn readiness_reports_a_store_that_stopped_answering_and_heals_with_it(backend: Backend) {
    let s3 = S3Server::start();
    let bucket = s3.create_bucket();
    let storage = s3.storage_settings(&bucket);
    let app = TestApp::spawn_with(backend, |s| s.storage = storage).await;
    let browser = app.browser();
    assert_eq!(browser.get("/readyz").await.status, 200);
    s3.stop();
    let page = browser.get("/readyz").await;
    assert_eq!((page.status.as_u16(), page.body.as_str()), (503, "storage unavailable\n"));
    s3.restart();
    let page = browser.get("/readyz").await;
    assert_eq!((page.status.as_u16(), page.body.as_str()), (200, "ready\n"));
}

both_backends!(
    a_bucket_that_answers_holds_the_files_of_serve_and_of_the_cli,
    uploads_sent_unsigned_are_stored_as_sent_in_parts,
    a_store_that_cannot_work_stops_start_up_with_one_line_naming_the_setting,
    readiness_reports_a_store_that_stopped_answering_and_heals_with_it
);
