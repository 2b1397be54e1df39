//! `watasu send` and `watasu status` as a CI job runs them: the real binary, a real token, a
//! server over HTTP, and none of the server's settings (a setting the server would refuse is in
//! the client's environment the whole time). Two files reach two recipients with their digests;
//! a server killed mid-upload and started again is waited for and the same upload finishes; a
//! wrong token creates nothing; a server that never answers ends the command; `status` follows a
//! download and `--wait` returns when it happened; plain http to another machine is refused
//! before any connection unless `--allow-insecure-http` says to send the token unencrypted.

mod gate;

use std::{
    io::Read,
    path::Path,
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{
    api_handovers::{Api, json_of},
    api_tokens::token_from_page,
    both_backends,
    support::{
        Backend, TestApp, count,
        installation::{Installation, kill_9},
    },
};
use gate::GateProxy;

const SENDER: &str = "ci@example.test";
const KIM: &str = "kim@example.test";
const LEE: &str = "lee@example.test";
const MIB: u64 = 1 << 20;

/// `watasu ARGS` with `token` in WATASU_TOKEN (none when empty), as a CI step starts it.
fn client(args: &[&str], token: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_watasu"));
    command
        .args(args)
        // A server setting that would stop `watasu serve` from starting: a client never reads it.
        .env("WATASU_SECRET_KEY", "not a key")
        .env_remove("WATASU_TOKEN")
        .env_remove("WATASU_SERVER")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !token.is_empty() {
        command.env("WATASU_TOKEN", token);
    }
    command
}

fn finished(output: Output) -> (i32, String, String) {
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(output.stdout), text(output.stderr))
}

/// Runs `watasu ARGS` to its end: exit code, stdout, stderr.
fn run(args: &[&str], token: &str) -> (i32, String, String) {
    finished(tokio::task::block_in_place(|| client(args, token).output()).unwrap())
}

fn wait(child: Child) -> (i32, String, String) {
    finished(tokio::task::block_in_place(|| child.wait_with_output()).unwrap())
}

fn sha256_of(path: &Path) -> String {
    let mut file = std::fs::File::open(path).unwrap();
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    while let n @ 1.. = file.read(&mut buf).unwrap() {
        hasher.update(&buf[..n]);
    }
    hex::encode(hasher.finalize())
}

fn write(dir: &Path, name: &str, content: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The handover id of `send`'s last line, and each recipient's link of the lines before.
fn sent(stdout: &str) -> (i64, Vec<(String, String)>) {
    let mut lines: Vec<&str> = stdout.lines().collect();
    let last = lines.pop().unwrap_or_default();
    let id = last.strip_prefix("handover ").and_then(|id| id.parse().ok());
    let links = lines
        .iter()
        .map(|l| l.split_once("  ").expect("recipient  link"))
        .map(|(to, link)| (to.trim().to_owned(), link.trim().to_owned()));
    (id.unwrap_or_else(|| panic!("no handover id in {stdout:?}")), links.collect())
}

/// The share token at the end of a link.
fn token_of(link: &str) -> &str {
    link.rsplit('/').next().unwrap()
}

async fn two_files_sent_to_two_recipients_print_both_links_and_the_handover_holds_their_digests(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = token_from_page(&app.signed_in_sender(SENDER).await, &["shares:read", "shares:write"]).await;
    let dir = tempfile::tempdir().unwrap();
    let report = write(dir.path(), "report.pdf", &b"%PDF quarterly figures\n".repeat(5000));
    let notes = write(dir.path(), "notes.txt", b"read me first\n");

    let args = ["send", &report, &notes, "--to", KIM, "--to", LEE, "--server", &app.base, "--expires-in", "2d"];
    let (code, stdout, stderr) = run(&args, &token);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.is_empty(), "no progress on a stderr that is no terminal: {stderr}");
    let (id, links) = sent(&stdout);
    let recipients: Vec<&str> = links.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(recipients, [KIM, LEE], "{stdout}");
    assert!(links.iter().all(|(_, link)| link.starts_with(&format!("{}/s/", app.base))), "{stdout}");

    let handover = json_of(&Api::new(&app, &token).get(&format!("/handovers/{id}")).await, 200);
    let files: Vec<(&str, &str)> = handover["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["sha256"].as_str().unwrap()))
        .collect();
    let (report_sha, notes_sha) = (sha256_of(Path::new(&report)), sha256_of(Path::new(&notes)));
    assert_eq!(files, [("report.pdf", report_sha.as_str()), ("notes.txt", notes_sha.as_str())], "{handover}");

    // Each recipient's mail carries their own link, and a code asked for on it arrives.
    let mails = app.smtp.wait_for(2, Duration::from_secs(20)).await;
    for (to, link) in &links {
        assert!(
            mails.iter().any(|m| m.to == [to.clone()] && m.text().contains(link.as_str())),
            "no link mailed to {to}"
        );
        let before = app.smtp.messages().len();
        let asked = app.browser().ask_for_code(token_of(link), to).await;
        assert_eq!(asked.status, 200, "{}", asked.body);
        assert!(!app.smtp.code_for_after(to, before).await.is_empty());
    }
}

async fn uploads_in_db(inst: &Installation) -> Vec<(i64, i64)> {
    watasu::on_db!(&inst.db, |pool| sqlx::query_as("SELECT upload_offset, upload_length FROM uploads")
        .fetch_all(pool)
        .await
        .unwrap())
}

async fn a_server_killed_mid_upload_is_waited_for_and_the_same_upload_finishes_after_its_restart(backend: Backend) {
    let inst = Installation::new(backend).await;
    inst.add_sender(SENDER);
    let created = inst.run(&["token", "create", "--user", SENDER, "--name", "CI", "--scope", "shares:write"]);
    let token = created.lines().last().unwrap().trim().to_owned();
    let mut server = inst.start(&[]);
    // 120 MB, mostly a hole, with marks the digest depends on at both ends and in the middle.
    let file = inst.dir.path().join("app.zip");
    let mut content = std::fs::File::create(&file).unwrap();
    content.set_len(120_000_000).unwrap();
    for at in [0, 60_000_000, 119_999_000] {
        use std::{io::Write, os::unix::fs::FileExt};
        content.write_at(format!("mark {at}").as_bytes(), at).unwrap();
        content.flush().unwrap();
    }
    let proxy = GateProxy::start(server.addr.clone(), 40 * MIB).await;

    let child =
        client(&["send", file.to_str().unwrap(), "--to", KIM, "--server", &proxy.base()], &token).spawn().unwrap();
    let started = Instant::now();
    let offset = loop {
        match uploads_in_db(&inst).await.as_slice() {
            [(offset, _)] if *offset > 0 => break *offset,
            _ => assert!(started.elapsed() < Duration::from_secs(60), "the upload never got a durable offset"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    kill_9(&mut server);
    assert!(offset < 120_000_000, "the upload finished before the kill");
    let first_log = server.log();
    let restarted = inst.start_on(&server.addr, &[]);

    let (code, stdout, stderr) = wait(child);
    assert_eq!(code, 0, "{stdout}{stderr}\n{}", restarted.log());
    let (id, links) = sent(&stdout);
    assert_eq!(links.len(), 1, "{stdout}");
    let created = |log: &str| log.matches("upload created").count();
    assert_eq!(created(&first_log) + created(&restarted.log()), 1, "one tus upload only");
    assert!(restarted.log().contains("upload complete"), "{}", restarted.log());

    let read = inst.run(&["token", "create", "--user", SENDER, "--name", "CI", "--scope", "shares:read"]);
    let reader = read.lines().last().unwrap().trim().to_owned();
    let (code, stdout, stderr) = run(&["status", &id.to_string(), "--json", "--server", &restarted.base()], &reader);
    assert_eq!(code, 0, "{stderr}");
    let handover: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(handover["files"][0]["sha256"], sha256_of(&file), "{handover}");
    assert_eq!(handover["files"][0]["size_bytes"], 120_000_000, "{handover}");
}

async fn a_wrong_token_is_named_as_such_and_creates_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let reader = token_from_page(&app.signed_in_sender(SENDER).await, &["shares:read"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "report.pdf", b"figures");
    let send = ["send", &file, "--to", KIM, "--server", &app.base];

    let (code, stdout, stderr) = run(&send, "wts_not_a_token_of_ours");
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("wrong, expired or revoked"), "{stderr}");
    let (code, _, stderr) = run(&send, &reader);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("lacks the scope shares:write"), "{stderr}");
    let (code, _, stderr) = run(&send, "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("WATASU_TOKEN"), "{stderr}");

    for table in ["uploads", "shares", "files"] {
        let sql = match table {
            "uploads" => "SELECT count(*) FROM uploads WHERE id > $1",
            "shares" => "SELECT count(*) FROM shares WHERE id > $1",
            _ => "SELECT count(*) FROM files WHERE id > $1",
        };
        assert_eq!(count(app.db(), sql, 0).await, 0, "{table}");
    }
}

async fn status_follows_a_download_and_wait_returns_once_it_happened(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = token_from_page(&app.signed_in_sender(SENDER).await, &["shares:read", "shares:write"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "build.zip", b"the build\n");
    let (code, stdout, stderr) = run(&["send", &file, "--to", KIM, "--server", &app.base], &token);
    assert_eq!(code, 0, "{stderr}");
    let (id, links) = sent(&stdout);
    let id = id.to_string();
    let state = |stdout: &str| -> Value {
        let handover: Value = serde_json::from_str(stdout).unwrap();
        handover["shares"][0].clone()
    };

    let (code, stdout, stderr) = run(&["status", &id, "--json", "--server", &app.base], &token);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(state(&stdout)["state"], "waiting", "{stdout}");
    let (code, stdout, _) =
        run(&["status", &id, "--wait", "downloaded", "--timeout", "1s", "--server", &app.base], &token);
    assert_eq!(code, 3, "a wait that ran out: {stdout}");
    assert!(stdout.contains(KIM) && stdout.contains("waiting"), "{stdout}");

    let waiting = ["status", &id, "--wait", "downloaded", "--timeout", "2m", "--server", &app.base];
    let waiting = client(&waiting, &token).spawn().unwrap();
    let share = token_of(&links[0].1);
    let browser = app.browser();
    let before = app.smtp.messages().len();
    let code_step = browser.ask_for_code(share, KIM).await;
    let code = app.smtp.code_for_after(KIM, before).await;
    assert_eq!(browser.submit_code(share, &code_step.csrf_token(), &code).await.status, 303);
    let download_step = browser.open_link(share).await;
    let downloaded = browser.download(share, &download_step.csrf_token()).await;
    assert_eq!(downloaded.bytes().await.unwrap().as_ref(), b"the build\n");

    let (code, stdout, stderr) = wait(waiting);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with(KIM) && l.contains("downloaded")), "{stdout}");
    let (code, stdout, stderr) = run(&["status", &id, "--json", "--server", &app.base], &token);
    assert_eq!(code, 0, "{stderr}");
    let share = state(&stdout);
    assert_eq!((&share["outcome"], &share["state"]), (&"downloaded".into(), &"downloaded".into()), "{stdout}");
    assert!(share["state_at"].is_string(), "{stdout}");
}

/// `send` to `http://example.test` with every plain-http request routed through `proxy` (reqwest
/// honours HTTP_PROXY): another machine by its name, yet reachable from the test.
fn through_proxy(file: &str, proxy: &str, token: &str, allow: bool) -> (i32, String, String) {
    let mut args = vec!["send", file, "--to", KIM, "--server", "http://example.test"];
    if allow {
        args.push("--allow-insecure-http");
    }
    let mut command = client(&args, token);
    for name in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"] {
        command.env_remove(name);
    }
    finished(tokio::task::block_in_place(|| command.env("HTTP_PROXY", proxy).output()).unwrap())
}

async fn plain_http_to_another_machine_is_refused_before_any_connection_unless_the_flag_allows_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = token_from_page(&app.signed_in_sender(SENDER).await, &["shares:write"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "report.pdf", b"figures");
    // A listener no one accepts on: a connection the client made would wait in its backlog.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let listening = format!("http://{}", listener.local_addr().unwrap());

    let started = Instant::now();
    let (code, stdout, stderr) = through_proxy(&file, &listening, &token, false);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unencrypted: use https://") && stderr.contains("--allow-insecure-http"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "ended only after {:?}", started.elapsed());
    let tried = listener.accept().map(drop).map_err(|e| e.kind());
    assert_eq!(tried, Err(std::io::ErrorKind::WouldBlock), "the client connected before refusing");
    // Through the app itself the refusal holds too: nothing is uploaded or shared.
    let (code, _, stderr) = through_proxy(&file, &app.base, &token, false);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await, 0);

    let (code, stdout, stderr) = through_proxy(&file, &app.base, &token, true);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (_, links) = sent(&stdout);
    assert_eq!(links.len(), 1, "{stdout}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await, 1);
}

/// The base address of a server that accepts connections and never answers.
async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let (address, accepting) = crate::support::silent_listener().await;
    (format!("http://{address}"), accepting)
}

/// A server that accepts connections and never answers ends the command within its deadline,
/// saying so, instead of hanging a CI job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_accepts_and_never_answers_ends_the_command_saying_so() {
    let (silent, accepting) = silent_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "report.pdf", b"figures");

    let started = Instant::now();
    let (code, stdout, stderr) = run(&["send", &file, "--to", KIM, "--server", &silent], "wts_some_token");
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("no answer within 60 s"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(90), "ended only after {:?}", started.elapsed());
    assert!(!stderr.contains("wts_some_token"), "{stderr}");
    accepting.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_server_that_never_answers_ends_at_its_timeout() {
    let (silent, accepting) = silent_server().await;

    let started = Instant::now();
    let waiting = ["status", "42", "--wait", "downloaded", "--timeout", "2s", "--server", &silent];
    let (code, stdout, stderr) = run(&waiting, "wts_some_token");
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stderr.contains("no answer before the timeout"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "ended only after {:?}", started.elapsed());
    accepting.abort();
}

both_backends!(
    two_files_sent_to_two_recipients_print_both_links_and_the_handover_holds_their_digests,
    a_server_killed_mid_upload_is_waited_for_and_the_same_upload_finishes_after_its_restart,
    a_wrong_token_is_named_as_such_and_creates_nothing,
    status_follows_a_download_and_wait_returns_once_it_happened,
    plain_http_to_another_machine_is_refused_before_any_connection_unless_the_flag_allows_it,
);
