//! A handover of several files in a real Chromium, in Japanese and English, on a phone and a
//! desktop, with JavaScript and without: the page before the code counts the files without naming
//! them, the download step lists them (the harness checks every page state with axe-core, and
//! nothing reaches past the right edge), and on the desktop "Download all" saves the ZIP archive,
//! then a file's own button saves that file, with one claim, and the link's page then offers the
//! files again to that browser.

use watasu::i18n::Lang;

use crate::support::{
    Backend, RECIPIENT, TestApp, TestShare,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT, saved_file},
};

const FILES: [(&str, &[u8]); 3] =
    [("見積書.pdf", b"%PDF-1.4 quote\n"), ("notes.txt", b"some notes\n"), ("図面 (最終版).dwg", b"drawing\n")];

async fn bundle(app: &TestApp, round: usize) -> TestShare {
    let sender = app.create_sender(&format!("sender-{round}@example.test"), "佐藤 花子").await;
    FILES
        .iter()
        .fold(app.fake_share().sender(sender), |share, (name, content)| share.file(name, content))
        .create()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_pages_of_several_files_pass_axe_in_both_languages_at_both_widths_and_save_the_zip_and_a_file() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let downloads = tempfile::tempdir().unwrap();
    let rounds = [
        (Lang::Ja, BrowserOptions::desktop().downloads_to(downloads.path())),
        (Lang::Ja, BrowserOptions::phone().without_javascript()),
        (Lang::En, BrowserOptions::phone().language("en")),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let share = bundle(&app, round).await;
        let link = format!("{}/s/{}", app.base, share.token);
        let browser = BrowserSession::start(options).await;
        let many = &lang.text().recipient.many;

        browser.goto(&link).await;
        assert_eq!(browser.text("h1").await, many.landing_title, "round {round}");
        assert!(browser.text("#step .lead").await.contains('3'), "round {round}");
        let source = browser.source().await;
        assert!(FILES.iter().all(|(name, _)| !source.contains(name)), "round {round}: a name before the code");
        browser.assert_no_horizontal_overflow("the page before the code").await;

        app.walk_to_download_step(&browser, &link, RECIPIENT).await;
        assert_eq!(browser.text("h1").await, many.download_title, "round {round}");
        assert_eq!(browser.text(".file-item[data-position='2'] .file-name").await, FILES[2].0);
        browser.assert_no_horizontal_overflow("the download step of several files").await;

        if round == 0 {
            browser.click("#step .download-all").await;
            let zip = saved_file(downloads.path(), |name| name.starts_with("watasu-") && name.ends_with(".zip")).await;
            assert!(std::fs::read(&zip).unwrap().starts_with(b"PK\x03\x04"), "{zip:?} is no ZIP");
            browser.click(".file-item[data-position='0'] .download-one").await;
            let one = saved_file(downloads.path(), |name| name == FILES[0].0).await;
            assert_eq!(std::fs::read(one).unwrap(), FILES[0].1);
            // Back at the link, the "already downloaded" page offers this browser the files again.
            browser.goto(&link).await;
            browser.wait_for("section.card[data-status='410'] .file-item", DEFAULT_WAIT).await;
            browser.assert_no_horizontal_overflow("the downloaded page with the files again").await;
            browser.screenshot("recipient-bundle-downloaded").await;
        }
        browser.close().await;
    }
    app.stop().await;
}
