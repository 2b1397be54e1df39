//! Several files for several people in a real Chromium: the sender picks three files, leaves one
//! out from the list (with JavaScript, where each file then goes through the resumable upload) or
//! sends them in the form itself (without), names two addresses in the one field, and the created
//! page shows each recipient with a link of their own; the share page shows the handover with its
//! other recipient, and the list "+ 1 more file". In both languages, at phone and desktop width;
//! the harness checks each page state with axe-core.

use std::path::PathBuf;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        texts,
    },
};

const RECIPIENTS: &str = "ichiro@example.test, jiro@example.test";
const SUBMIT: &str = "main form[data-upload] > button[type=submit]";

/// Three files to pick: the second is the one left out when the list offers it.
fn write_files(dir: &std::path::Path) -> [PathBuf; 3] {
    ["契約書.pdf", "left-out.txt", "appendix.pdf"].map(|name| {
        let path = dir.join(name);
        std::fs::write(&path, format!("the contents of {name}")).unwrap();
        path
    })
}

async fn handover_walk(app: &TestApp, options: BrowserOptions, lang: Lang, email: &str, script: bool) {
    let sender = app.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path());
    let browser = BrowserSession::start(options).await;
    browser.sign_in(&app.base, email).await;
    let h = &lang.text().dashboard.handover;

    browser.goto(&format!("{}/shares/new", app.base)).await;
    assert_eq!(browser.text("#file-hint").await, h.files_hint.replace("{files}", "100").replace("{size}", "2.1 GB"));
    browser.fill("#recipient", RECIPIENTS).await;
    let (picks, sent): (Vec<&PathBuf>, Vec<&str>) = if script {
        (files.iter().collect(), vec!["契約書.pdf", "appendix.pdf"])
    } else {
        (vec![&files[0], &files[2]], vec!["契約書.pdf", "appendix.pdf"])
    };
    let paths: Vec<&str> = picks.iter().map(|path| path.to_str().unwrap()).collect();
    browser.find("input[type=file]").await.send_keys(&paths.join("\n")).await.expect("choosing the files");
    if script {
        browser.wait_for("#chosen-files [data-chosen-file]", DEFAULT_WAIT).await;
        assert_eq!(browser.find_all("#chosen-files [data-chosen-file]").await.len(), 3);
        let remove = h.remove_file_named.replace("{name}", "left-out.txt");
        browser.click(&format!("#chosen-files button[aria-label='{remove}']")).await;
        assert_eq!(browser.find_all("#chosen-files [data-chosen-file]").await.len(), 2);
        assert!(!browser.text("#chosen-files").await.contains("left-out.txt"), "the removed file is still listed");
        browser.screenshot(&format!("handover-chosen-{}", lang.code())).await;
    }
    browser.click(SUBMIT).await;

    browser.wait_until("the created page", DEFAULT_WAIT, async |b| b.current_path().await.ends_with("/created")).await;
    let links = browser.find_all("[data-created-link] input").await;
    let mut values = Vec::new();
    for link in links {
        values.push(link.prop("value").await.unwrap().unwrap_or_default());
    }
    assert_eq!(values.len(), 2, "a link per recipient");
    assert!(values.iter().all(|link| link.starts_with(&format!("{}/s/", app.base))), "{values:?}");
    assert_ne!(values[0], values[1]);
    assert_eq!(browser.text("[data-created-link]:first-child [data-created-recipient]").await, "ichiro@example.test");
    let handover = crate::support::count(app.db(), "SELECT max(id) FROM handovers WHERE sender_id = $1", sender).await;
    let names = texts(app.db(), "SELECT original_name FROM files WHERE handover_id = $1 ORDER BY position", handover);
    assert_eq!(names.await, sent);
    browser.assert_no_horizontal_overflow("the created page").await;

    browser.click("[data-created-link]:first-child a.created-share").await;
    browser.wait_for("[data-other-recipients]", DEFAULT_WAIT).await;
    assert_eq!(browser.text("[data-other-recipients] a").await, "jiro@example.test");
    browser.click("[data-end-handover] summary").await;
    browser.wait_for("[data-end-handover][open] button[type=submit]", DEFAULT_WAIT).await;
    browser.assert_no_horizontal_overflow("the share page of a handover").await;

    browser.goto(&format!("{}/shares", app.base)).await;
    assert_eq!(browser.text("[data-more-files]").await, h.more_file);
    browser.assert_no_horizontal_overflow("the list").await;
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

async fn several_files_go_to_several_people_in_a_browser(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    handover_walk(&app, BrowserOptions::desktop(), Lang::Ja, "handover-desktop@example.test", true).await;
    handover_walk(&app, BrowserOptions::phone().language("en"), Lang::En, "handover-phone@example.test", true).await;
    let without = BrowserOptions::desktop().without_javascript().language("en");
    handover_walk(&app, without, Lang::En, "handover-nojs@example.test", false).await;
    let without = BrowserOptions::phone().without_javascript();
    handover_walk(&app, without, Lang::Ja, "handover-nojs-phone@example.test", false).await;
    app.stop().await;
}

both_backends!(several_files_go_to_several_people_in_a_browser);
