//! The virus scan's words pass axe-core in both languages at both widths: the recipient's "being
//! checked" page, the created page's word that the mail waits for the scan, and the sender's
//! share page with each file's mark (being checked, clean,
//! refused with its signature) and the refusal on the timeline; a request's upload page with a
//! file being checked, and its sender's page with a file being checked or refused. SQLite alone:
//! the markup does not depend on the database.

use crate::{
    file_requests::{UPLOADER, make_request, roomy},
    scan::{
        held::wait_for_attempts,
        held::wait_until_ended,
        inbound::{finish, leave, open_request, wait_for_inbound},
        scanning_app, send, token, wait_for_states,
    },
    support::{
        Backend,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        clamd::{self, EICAR},
        process::free_local_addr,
    },
};

const SENDER: &str = "sender@example.test";

async fn open(browser: &BrowserSession, url: &str, selector: &str) {
    browser.goto(url).await;
    browser.wait_for(selector, DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow(url).await;
    let text = browser.text("body").await;
    assert!(!text.contains('|'), "{url}: a phrase mark shows as text: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_scan_s_pages_pass_axe_core_in_both_languages_at_both_widths() {
    let clamd = tokio::task::spawn_blocking(|| clamd::shared().url()).await.unwrap();
    let scanned = scanning_app(Backend::Sqlite, &clamd, |_| {}).await;
    let refused = send(&scanned, &[("notes.txt", b"harmless notes"), ("invoice.com", EICAR)]).await;
    wait_for_states(&scanned, refused.share_id, &["clean", "infected"]).await;
    wait_until_ended(&scanned, refused.share_id).await;
    // Nothing listens where this app looks for clamd: its file stays held.
    let held_app = scanning_app(Backend::Sqlite, &format!("tcp://{}", free_local_addr()), |_| {}).await;
    let held = send(&held_app, &[("report.pdf", b"figures")]).await;
    wait_for_attempts(&held_app, held.share_id, 1).await;
    // A request with a refused file, and one with a file being checked.
    let (refused_request, uploader) = open_request(&scanned).await;
    leave(&uploader, &refused_request, &[("invoice.com", EICAR), ("notes.txt", b"harmless notes")]).await;
    wait_for_inbound(&scanned, &refused_request, &["infected", "clean"]).await;
    finish(&uploader, &refused_request).await;
    let (held_request, uploader) = open_request(&held_app).await;
    leave(&uploader, &held_request, &[("report.pdf", b"figures")]).await;
    let dir = tempfile::tempdir().unwrap();
    let chosen = dir.path().join("report.pdf");
    std::fs::write(&chosen, b"figures").unwrap();

    for language in ["ja", "en"] {
        for options in [BrowserOptions::desktop(), BrowserOptions::phone()] {
            let browser = BrowserSession::start(options.language(language)).await;
            open(&browser, &format!("{}/s/{}", held_app.base, token(&held)), "main h1").await;
            browser.sign_in(&held_app.base, SENDER).await;
            open(&browser, &format!("{}/shares/{}", held_app.base, held.share_id), "[data-scan=pending]").await;
            open(&browser, &format!("{}/shares/{}/created", held_app.base, held.share_id), "[data-scan-held]").await;
            open(&browser, &format!("{}/requests/{}", held_app.base, held_request.id), "[data-scan=pending]").await;
            // The uploader's own page, with the file being checked.
            let request = make_request(&held_app, roomy()).await;
            browser.goto(&format!("{}/s/{}", held_app.base, request.token)).await;
            let before = held_app.smtp.messages().len();
            browser.fill("input[name=email]", UPLOADER).await;
            browser.click("#step form[action$='/email'] button[type=submit]").await;
            browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
            let code = held_app.smtp.code_for_after(UPLOADER, before).await;
            browser.fill("#code", &code).await;
            browser.click("#step form[action$='/code'] button[type=submit]").await;
            browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
            browser.find("#request-files").await.send_keys(chosen.to_str().unwrap()).await.unwrap();
            browser.click("#step form[action$='/upload'] button[type=submit]").await;
            browser.wait_for(".arrived [data-scan=pending]", DEFAULT_WAIT).await;
            browser.assert_no_horizontal_overflow("the upload step with a file being checked").await;
            browser.sign_in(&scanned.base, SENDER).await;
            let refused_page = format!("{}/shares/{}", scanned.base, refused.share_id);
            open(&browser, &refused_page, "[data-scan=infected]").await;
            browser.wait_for("li[data-kind=scan_refused]", DEFAULT_WAIT).await;
            let request_page = format!("{}/requests/{}", scanned.base, refused_request.id);
            open(&browser, &request_page, "[data-scan=infected]").await;
            browser.close().await;
        }
    }
    held_app.stop().await;
    scanned.stop().await;
}
