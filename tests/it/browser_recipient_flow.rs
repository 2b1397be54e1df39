//! The forgiving recipient flow in a real Chromium, with JavaScript on (htmx swaps) and off (full
//! page loads), on both backends: a reload of the code step shows it again and sends nothing; a
//! mistyped address, "use a different address", then the right one reaches the file; a second
//! press of the download button after the delivery grace gets the "already downloaded" page that
//! says when this browser downloaded; and a phone never scrolls sideways.

use std::{path::Path, time::Duration};

use watasu::i18n::Lang;

use crate::support::{
    Backend, RECIPIENT, TestApp, TestShare,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    count, execute,
};
use watasu::db::Sql;

const TYPO: &str = "recipiant@example.test";
const EMAIL_SUBMIT: &str = "#step form[action$='/email'] button[type=submit]";
const CODE_SUBMIT: &str = "#step form[action$='/code'] button[type=submit]";
const OTHER_ADDRESS: &str = "#step form[action$='/address'] button[type=submit]";
const DOWNLOAD_BUTTON: &str = "#step form[action$='/download'] button[type=submit]";
const GONE_CARD: &str = "section.card[data-status='410']";
/// The WebDriver key code of Escape.
const ESCAPE: char = '\u{E00C}';

/// Code requests the share has had: a reload that sent a code would add one.
async fn challenges(app: &TestApp, share: &TestShare) -> i64 {
    count(app.db(), "SELECT count(*) FROM otp_challenges WHERE share_id = $1", share.id).await
}

/// Waits for the step `name`, and checks that the page fits the window's width there and that
/// no Japanese phrase is broken in two.
async fn at_step(browser: &BrowserSession, name: &str) {
    browser.wait_for(&format!("#step[data-step={name}]"), DEFAULT_WAIT).await;
    check_layout(browser, &format!("the {name} step")).await;
}

/// The page fits the window's width, and on a Japanese page no marked phrase that fits on a line
/// breaks inside a word (a break at a space, a bracket or a comma is Japanese line breaking as
/// usual). How each heading and paragraph broke is printed, for the report.
async fn check_layout(browser: &BrowserSession, what: &str) {
    browser.assert_no_horizontal_overflow(what).await;
    let broken = browser
        .execute(
            "if (document.documentElement.lang !== 'ja') return []; const broken = []; \
             for (const span of document.querySelectorAll('.phrased')) { \
               const width = span.parentElement.getBoundingClientRect().width; \
               for (const node of span.childNodes) { \
                 if (node.nodeType !== Node.TEXT_NODE || !node.data.trim()) continue; \
                 const range = document.createRange(); range.selectNodeContents(node); \
                 const rects = [...range.getClientRects()].filter(r => r.width > 0); \
                 if (rects.reduce((w, r) => w + r.width, 0) > width) continue; \
                 let top = null; \
                 for (let i = 0; i < node.length; i++) { \
                   const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1); \
                   const box = r.getClientRects()[0]; if (!box || !node.data[i].trim()) continue; \
                   const open = /[\\s（「『(]/.test(node.data[i]) || /[\\s）」』)、。,]/.test(node.data[i - 1] || ' '); \
                   if (top !== null && box.top > top + 4 && !open) broken.push(node.data); \
                   top = box.top; } } } \
             return broken;",
        )
        .await;
    assert_eq!(broken, serde_json::json!([]), "{what}: phrases broken across lines");
    let lines = browser
        .execute(
            "return [...document.querySelectorAll('main h1, main p')].map(e => { \
               const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT); let lines = [''], top = null; \
               while (walker.nextNode()) { const n = walker.currentNode; \
                 for (let i = 0; i < n.length; i++) { const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1); \
                   const box = r.getClientRects()[0]; if (!box) continue; \
                   if (top !== null && box.top > top + 4) lines.push(''); top = box.top; lines[lines.length - 1] += n.data[i]; } } \
               return lines.join(' / '); });",
        )
        .await;
    eprintln!("{what}: {lines}");
}

/// Reloads the page and checks it is still at step `name`.
async fn reload_stays_at(browser: &BrowserSession, name: &str) {
    browser.reload().await;
    at_step(browser, name).await;
}

async fn wait_for_file(browser: &BrowserSession, dir: &Path) {
    let file = browser.wait_for_download(dir, Duration::from_secs(20)).await;
    assert_eq!(std::fs::read(&file).unwrap(), b"the file contents\n", "the downloaded bytes differ");
}

/// The walk: a typo, a reload, back to the email step, the right address, a reload, the code,
/// the download, and a second press after the grace. `label` names the screenshots.
async fn forgiving_walk(app: &TestApp, options: BrowserOptions, lang: Lang, label: &str) {
    let share = app.create_share().await;
    let downloads = tempfile::tempdir().unwrap();
    let javascript = options.javascript;
    let browser = BrowserSession::start(options.downloads_to(downloads.path())).await;
    let rf = &lang.text().recipient;
    let plain = |text: &str| text.replace('|', "");
    let link = format!("{}/s/{}", app.base, share.token);

    browser.goto(&link).await;
    at_step(&browser, "email").await;
    assert_eq!(browser.text(".once-before").await, plain(rf.once_before));
    browser.fill("input[name=email]", TYPO).await;
    browser.click(EMAIL_SUBMIT).await;
    at_step(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, TYPO);
    reload_stays_at(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, TYPO);
    assert_eq!(challenges(app, &share).await, 1, "the reload asked for a code");
    browser.screenshot(&format!("recipient-flow-{label}-1-typo")).await;

    browser.click(OTHER_ADDRESS).await;
    at_step(&browser, "email").await;
    assert_eq!(browser.attr("input[name=email]", "value").await.as_deref(), Some(TYPO));
    reload_stays_at(&browser, "email").await;
    assert_eq!(challenges(app, &share).await, 1, "going back asked for a code");
    // Escape closes the browser's suggestion of the address typed before, which a headless
    // Chromium would otherwise leave over the form, hanging the click.
    browser.fill("input[name=email]", &format!("{RECIPIENT}{ESCAPE}")).await;
    browser.click(EMAIL_SUBMIT).await;
    at_step(&browser, "code").await;
    assert_eq!(browser.text(".typed-address").await, RECIPIENT);
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    reload_stays_at(&browser, "code").await;
    assert_eq!(challenges(app, &share).await, 2, "the reload asked for a code");
    browser.screenshot(&format!("recipient-flow-{label}-2-right")).await;

    browser.fill("#code", &mail.code().expect("a code")).await;
    browser.click(CODE_SUBMIT).await;
    at_step(&browser, "download").await;
    assert_eq!(browser.text("#download-after").await, plain(rf.after_press), "the note is not there without a click");
    browser.click(DOWNLOAD_BUTTON).await;
    wait_for_file(&browser, downloads.path()).await;
    if javascript {
        // The pressed button is disabled, and looks it: grey, dashed, no pointer.
        browser.wait_for(&format!("{DOWNLOAD_BUTTON}:disabled"), DEFAULT_WAIT).await;
        let style = browser
            .execute_with(
                "const s = getComputedStyle(document.querySelector(arguments[0])); \
                 return [s.backgroundColor, s.borderTopStyle, s.cursor];",
                vec![serde_json::Value::from(DOWNLOAD_BUTTON)],
            )
            .await;
        assert_eq!(style, serde_json::json!(["rgb(228, 231, 235)", "dashed", "not-allowed"]), "the disabled button");
    }
    let code_mails = app.smtp.messages().iter().filter(|m| m.to == [RECIPIENT]).count();
    assert_eq!(code_mails, 1, "a reload sent a code mail");

    // After the delivery grace, a second press (JavaScript disables the button: a reload then).
    app.consumed_ago(share.id, 16 * 60).await;
    if javascript {
        browser.reload().await;
    } else {
        browser.click(DOWNLOAD_BUTTON).await;
    }
    browser.wait_for(GONE_CARD, DEFAULT_WAIT).await;
    check_layout(&browser, "the gone page").await;
    let (before, after) = rf.downloaded_here.split_once("{time}").unwrap();
    let said = browser.text(".end-body").await;
    assert!(said.starts_with(&plain(before)) && said.ends_with(&plain(after)), "{said:?}");
    browser.screenshot(&format!("recipient-flow-{label}-3-gone")).await;

    // The other ends of the flow, for the layout check and the line-break report.
    let locked = app.create_share().await;
    let lock = "UPDATE shares SET locked_at = expires_at WHERE id = $1";
    execute(app.db(), Sql::same(lock), locked.id).await;
    browser.goto(&format!("{}/s/{}", app.base, locked.token)).await;
    browser.wait_for("section.card-error[data-status='403']", DEFAULT_WAIT).await;
    check_layout(&browser, "the locked page").await;
    browser.goto(&format!("{}/s/{}", app.base, "0".repeat(64))).await;
    browser.wait_for("section.card-error[data-status='404']", DEFAULT_WAIT).await;
    check_layout(&browser, "the unknown-link page").await;

    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

// JavaScript off runs on a desktop: chromedriver's click on a phone-emulated page without
// JavaScript never returns (the renderer stops answering it).
async fn the_forgiving_walk_with_javascript_on_a_phone_in_japanese(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    forgiving_walk(&app, BrowserOptions::phone(), Lang::Ja, "js-phone").await;
    app.stop().await;
}

async fn the_forgiving_walk_with_javascript_off_on_a_desktop_in_english(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    forgiving_walk(&app, BrowserOptions::desktop().without_javascript().language("en"), Lang::En, "nojs").await;
    app.stop().await;
}

crate::both_backends!(
    the_forgiving_walk_with_javascript_on_a_phone_in_japanese,
    the_forgiving_walk_with_javascript_off_on_a_desktop_in_english
);
