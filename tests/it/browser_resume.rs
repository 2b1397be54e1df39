//! What a real Chromium does when the server's connection drops in the middle of a download: a
//! proxy in front of the app cuts the first file response after about 30 % of its bytes.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::support::{
    Backend, RECIPIENT, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    cut_proxy::CutProxy,
    event_kinds,
};

const SIZE: usize = 8 << 20;

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn session_cookie(head: &str) -> Option<String> {
    let cookies = header_value(head, "cookie")?;
    cookies.split(';').map(str::trim).find(|c| c.starts_with("watasu_session=")).map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chromium_resumes_a_cut_download_with_range_and_if_range_and_saves_the_exact_file() {
    let mut proxy = CutProxy::bind().await;
    let public = format!("http://{}", proxy.addr);
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.base_url = Some(public.parse().unwrap())).await;
    proxy.forward_to(app.addr, SIZE * 3 / 10);
    let content: &'static [u8] = Box::leak((0..SIZE).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into_boxed_slice());
    let sender = app.create_sender("sender@example.test", "Sender").await;
    let share = app.fake_share().sender(sender).file("big.bin", content).create().await;
    let downloads = tempfile::tempdir().unwrap();
    let browser = BrowserSession::start(BrowserOptions::desktop().downloads_to(downloads.path())).await;

    browser.goto(&format!("{public}/s/{}", share.token)).await;
    browser.fill("input[name=email]", RECIPIENT).await;
    browser.click("#step form[action$='/email'] button[type=submit]").await;
    browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
    let code = app.smtp.wait_for(1, Duration::from_secs(10)).await[0].code().unwrap();
    browser.fill("#code", &code).await;
    browser.click("#step form[action$='/code'] button[type=submit]").await;
    browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    browser.click("#step form[action$='/download'] button[type=submit]").await;

    let file = browser.wait_for_download(downloads.path(), Duration::from_secs(60)).await;
    assert!(proxy.cut_made(), "the proxy never saw the download");
    let saved = std::fs::read(&file).unwrap();
    assert_eq!(saved.len(), SIZE, "the saved file is {} bytes", saved.len());
    assert_eq!(hex::encode(Sha256::digest(&saved)), hex::encode(Sha256::digest(content)), "the saved file differs");

    // After the cut Chromium asked again on its own: a Range from where it was, with If-Range,
    // from the session that claimed (the only one the app serves).
    let requests = proxy.file_requests();
    eprintln!("file requests after the cut: {requests:#?}");
    assert!(requests.len() >= 2, "{requests:#?}");
    let claimer = session_cookie(&requests[0]).expect("the first file request had the session cookie");
    let resumed = requests[1..].iter().find(|h| header_value(h, "range").is_some()).expect("no ranged request");
    let range = header_value(resumed, "range").unwrap();
    let from: usize = range.strip_prefix("bytes=").and_then(|r| r.strip_suffix('-')).unwrap().parse().unwrap();
    assert!(from > 0 && from < SIZE, "{range}");
    assert_eq!(
        header_value(resumed, "if-range"),
        Some(format!("\"{}\"", hex::encode(Sha256::digest(content))).as_str())
    );
    assert_eq!(session_cookie(resumed), Some(claimer));
    crate::support::eventually(Duration::from_secs(10), "the completed download recorded", async || {
        event_kinds(&app, share.id).await.contains(&"download_completed".to_owned())
    })
    .await;
    assert_eq!(event_kinds(&app, share.id).await.iter().filter(|k| *k == "downloaded").count(), 1);

    browser.close().await;
    app.stop().await;
}
