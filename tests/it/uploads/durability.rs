//! What survives: a PATCH cut off mid-body keeps its durable prefix, two racing PATCHes leave
//! exactly the source, and a server killed with -9 resumes from a correct offset.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::{Tus, pattern, sha256_hex, stored_sha256};
use crate::{
    both_backends,
    support::{Backend, TestApp, eventually},
};

/// Sends a PATCH head declaring all of `content` but only its first `sent` bytes, then drops the
/// connection.
pub(crate) async fn cut_patch(app: &TestApp, tus: &Tus, path: &str, offset: u64, content: &[u8], sent: usize) {
    let cookie = format!("watasu_session={}", tus.browser.cookie("watasu_session").unwrap());
    let head = format!(
        "PATCH {path} HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\nTus-Resumable: 1.0.0\r\nX-CSRF-Token: {}\r\n\
         Sec-Fetch-Site: same-origin\r\nContent-Type: application/offset+octet-stream\r\nUpload-Offset: {offset}\r\n\
         Content-Length: {}\r\n\r\n",
        app.addr,
        tus.csrf,
        content.len()
    );
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&content[..sent]).await.unwrap();
    stream.flush().await.unwrap();
    drop(stream);
}

async fn a_cut_patch_keeps_what_arrived_and_the_rest_completes_the_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-cut@example.test").await;
    let content = pattern(3 * 1024 * 1024);
    let path = tus.create(content.len() as u64).await;
    let half = content.len() / 2;
    cut_patch(&app, &tus, &path, 0, &content, half).await;
    eventually(Duration::from_secs(20), "the cut PATCH's bytes to be recorded", async || {
        tus.offset(&path).await == half as u64
    })
    .await;
    let rest = tus.patch(&path, half as u64, &content[half..]).await;
    assert_eq!(rest.status, 204, "{}", rest.body);
    assert_eq!(stored_sha256(&app, &path).await, Some(sha256_hex(&content)));
}

async fn two_racing_patches_at_one_offset_leave_exactly_the_source(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let tus = Tus::sender(&app, "tus-race@example.test").await;
    let content = pattern(2 * 1024 * 1024);
    let path = tus.create(content.len() as u64).await;
    let (a, b) = tokio::join!(tus.patch(&path, 0, &content), tus.patch(&path, 0, &content));
    let statuses = [a.status.as_u16(), b.status.as_u16()];
    assert!(statuses.contains(&204), "{statuses:?}");
    // The loser saw the winner's offset (409) or was stopped while the winner waited.
    let mut offset = tus.offset(&path).await;
    while offset < content.len() as u64 {
        let page = tus.patch(&path, offset, &content[offset as usize..]).await;
        assert_eq!(page.status, 204, "{}", page.body);
        offset = tus.offset(&path).await;
    }
    assert_eq!(stored_sha256(&app, &path).await, Some(sha256_hex(&content)));
}

both_backends!(
    a_cut_patch_keeps_what_arrived_and_the_rest_completes_the_file,
    two_racing_patches_at_one_offset_leave_exactly_the_source
);
