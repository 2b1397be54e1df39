//! The real `watasu serve` stopped with SIGTERM while a plain form upload is arriving: the sender
//! gets a page saying the server is restarting (not a reset connection), and what had arrived
//! is removed at once, not left for the leftover sweep.

use std::time::Duration;

use bytes::Bytes;

use super::{
    ChannelBody, db_state, eventually, files_in, is_temp, killed::signed_in_sender, upload_head, upload_request,
};
use crate::{
    both_backends,
    support::{Backend, Page, installation::Installation},
};

const SENDER: &str = "drill-sender@example.test";
const RECIPIENT: &str = "drill-recipient@example.test";

async fn sigterm_mid_upload_answers_the_restarting_page_and_keeps_nothing(backend: Backend) {
    let inst = Installation::new(backend).await;
    let password = inst.add_sender(SENDER);
    // Uploads are cut at half the grace: 5 s to finish, 5 s to answer.
    let mut server = inst.start(&["--shutdown-grace", "10s"]);
    let (browser, csrf) = signed_in_sender(&server.base(), &password).await;
    let before = db_state(&inst.db).await;
    let files_dir = inst.files_dir();
    let temps = || files_in(&files_dir).into_iter().filter(|(name, _)| is_temp(name)).collect::<Vec<_>>();

    // 4 MiB of a bigger file, then the sender's side goes quiet, and the server is told to stop.
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let request = upload_request(&browser.client, &server.base(), reqwest::Body::wrap(ChannelBody(rx)));
    let upload = tokio::spawn(request.send());
    tx.send(Bytes::from(upload_head(&csrf, RECIPIENT, "half.bin"))).await.unwrap();
    for _ in 0..4 {
        tx.send(Bytes::from(vec![7u8; 1 << 20])).await.unwrap();
    }
    eventually(Duration::from_secs(30), "the upload reaching the disk", async || {
        temps().iter().any(|(_, size)| *size >= 3 << 20)
    })
    .await;
    server.signal("TERM");

    // The cut removes the partial file before it is logged, long before the grace ends.
    tokio::task::block_in_place(|| server.wait_for_log("upload cut", Duration::from_secs(30)));
    assert_eq!(temps(), [], "the partial file was left behind");
    drop(tx);
    let answer = upload.await.unwrap().expect("the sender got no answer");
    assert_eq!(answer.headers().get("connection").map(|v| v.to_str().unwrap()), Some("close"));
    let page = Page::read(answer).await;
    assert_eq!(page.status, 503, "{}", page.body);
    let titles = [watasu::i18n::Lang::En, watasu::i18n::Lang::Ja].map(|lang| lang.text().errors.restarting.title);
    assert!(titles.iter().any(|title| page.body.contains(title)), "{}", page.body);

    // The server then stops within its grace; nothing of the upload remains.
    let code = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(30)));
    assert_eq!(code, Some(0), "{}", server.log());
    assert_eq!(db_state(&inst.db).await, before);
    assert_eq!(temps(), []);
}

both_backends!(sigterm_mid_upload_answers_the_restarting_page_and_keeps_nothing);
