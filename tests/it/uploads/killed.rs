//! The real `watasu serve` killed with -9 in the middle of a long PATCH, then started again on
//! the same data folder and database: the upload resumes from a durable offset whose bytes are
//! the source's, and the finished file shares with the source's digest.

use std::{os::unix::process::ExitStatusExt, time::Duration};

use tokio::io::AsyncWriteExt;
use watasu::db::Db;

use super::{Tus, id_of, pattern, sha256_hex};
use crate::support::{
    Backend, Browser, Page, SmtpSink, fresh_database,
    process::{Server, run_watasu},
};

const SENDER: &str = "killed-upload@example.test";
const MIB: usize = 1 << 20;
const SIZE: usize = 50 * MIB;

fn settings(dir: &std::path::Path, url: &str, smtp: &SmtpSink) -> Vec<String> {
    let dir = dir.to_str().unwrap();
    let secret = crate::support::test_secret_key();
    let mail = smtp.url();
    ["--data-dir", dir, "--database-url", url, "--smtp-url", &mail, "--secret-key", &secret]
        .into_iter()
        .chain(["--mail-from", "watasu <watasu@example.test>"])
        .map(str::to_owned)
        .collect()
}

async fn signed_in(server: &Server, password: &str) -> Tus {
    let browser = Browser::new(&server.base());
    let answer = browser.sign_in(SENDER, password).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let csrf = browser.get("/shares/new").await.csrf_token();
    Tus { browser, csrf }
}

/// The head of one PATCH declaring the whole file from offset 0.
fn patch_head(server: &Server, tus: &Tus, path: &str) -> String {
    format!(
        "PATCH {path} HTTP/1.1\r\nHost: {}\r\nCookie: watasu_session={}\r\nTus-Resumable: 1.0.0\r\n\
         X-CSRF-Token: {}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/offset+octet-stream\r\n\
         Upload-Offset: 0\r\nContent-Length: {SIZE}\r\n\r\n",
        server.addr,
        tus.browser.cookie("watasu_session").unwrap(),
        tus.csrf
    )
}

async fn stored_offset(db: &Db) -> i64 {
    watasu::on_db!(db, |pool| sqlx::query_scalar("SELECT upload_offset FROM uploads").fetch_one(pool).await.unwrap())
}

async fn a_server_killed_mid_patch_resumes_from_a_durable_offset_and_the_share_has_the_sources_digest(
    backend: Backend,
) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let smtp = SmtpSink::start().await;
    let args = settings(dir.path(), &url, &smtp);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut add = vec!["user", "add", "--email", SENDER, "--name", "Killed Upload"];
    add.extend(&args);
    let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu(&add, &[]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let password = stdout.lines().find_map(|l| l.strip_prefix("password (shown once): ")).unwrap().trim().to_owned();
    let server_args = &args[2..]; // `serve` takes the data folder itself
    let mut server = tokio::task::block_in_place(|| Server::start(dir.path(), server_args));
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    let tus = signed_in(&server, &password).await;
    let content = pattern(SIZE);
    let path = tus.create(SIZE as u64).await;

    // One PATCH declaring the whole file, sent a MiB at a time until a checkpoint is recorded.
    let head = patch_head(&server, &tus, &path);
    let mut stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut sent = 0;
    while stored_offset(&db).await == 0 {
        assert!(sent < SIZE - MIB, "no checkpoint was recorded while {sent} bytes went out");
        stream.write_all(&content[sent..sent + MIB]).await.unwrap();
        sent += MIB;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.signal("KILL");
    let status = tokio::task::block_in_place(|| server.child.wait()).unwrap();
    assert_eq!(status.signal(), Some(9));
    drop(stream);

    let server = tokio::task::block_in_place(|| Server::start(dir.path(), server_args));
    let tus = signed_in(&server, &password).await;
    let offset = tus.offset(&path).await as usize;
    assert!(offset > 0 && offset <= sent, "offset {offset} after sending {sent}");
    let key: String = watasu::on_db!(&db, |pool| sqlx::query_scalar("SELECT storage_key FROM uploads")
        .fetch_one(pool)
        .await
        .unwrap());
    let partial = std::fs::read(dir.path().join("files").join(format!(".part-{key}"))).unwrap();
    assert!(partial.len() >= offset && partial[..offset] == content[..offset], "the durable prefix is the source's");
    let rest = tus.patch(&path, offset as u64, &content[offset..]).await;
    assert_eq!(rest.status, 204, "{}", rest.body);

    let form = reqwest::multipart::Form::new()
        .text("csrf_token", tus.csrf.clone())
        .text("recipient", "client@example.test")
        .text("expires_in", "1d")
        .text("upload", id_of(&path).to_owned());
    let request = tus.browser.client.post(tus.browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    let answer = Page::read(request.multipart(form).send().await.unwrap()).await;
    let created = answer.follow_created(&tus.browser.client, &tus.browser.base).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let digest: String =
        watasu::on_db!(&db, |pool| sqlx::query_scalar("SELECT sha256 FROM files").fetch_one(pool).await.unwrap());
    assert_eq!(digest, sha256_hex(&content));
    assert!(std::fs::read(dir.path().join("files").join(&key)).unwrap() == content, "the stored file is the source");
}

crate::both_backends!(a_server_killed_mid_patch_resumes_from_a_durable_offset_and_the_share_has_the_sources_digest);
