//! The sender's pages in a real Chromium: a focused button keeps its focus while the share page
//! refreshes itself (and a hidden tab asks nothing), ending a share or disabling a member asks
//! first with JavaScript on and off, and the new-share form's drop zone names the chosen file and
//! refuses one over the limit before sending it. Each page met is checked with axe-core
//! (the harness does it; the explicit checks cover states met between two steps).

use std::time::Duration;

use serde_json::{Value, json};
use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp, TestShare,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        count,
    },
};

/// Longer than one poll (4 s) with room for a slow machine.
const POLL_WAIT: Duration = Duration::from_secs(20);

/// A new sender `email` with a one-hour share, signed in in a Chromium with `options`, pages in
/// English.
async fn signed_in(app: &TestApp, options: BrowserOptions, email: &str) -> (BrowserSession, TestShare) {
    let sender = app.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
    let share =
        app.fake_share().sender(sender).recipient("client@example.test").file("plan.pdf", b"plan").create().await;
    let browser = BrowserSession::start(options.language("en")).await;
    browser.sign_in(&app.base, email).await;
    (browser, share)
}

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

/// Counts the answered polls of the share page from now on.
const COUNT_POLLS: &str = "window.answeredPolls = 0; \
    document.body.addEventListener('htmx:afterRequest', function () { window.answeredPolls += 1; });";

/// Makes the page believe its tab is hidden while `window.fakeHidden` is set (from now on), and
/// counts the polls held back (`htmx:beforeRequest` cancelled) and answered, noting how many were
/// answered when the first one was held back.
const FAKE_HIDDEN_TAB: &str = "window.fakeHidden = true; window.heldPolls = 0; window.answeredPolls = 0; \
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: function () { return window.fakeHidden ? 'hidden' : 'visible'; } }); \
    window.addEventListener('htmx:beforeRequest', function (e) { \
      if (!e.defaultPrevented) return; \
      window.heldPolls += 1; \
      if (window.heldPolls === 1) window.answeredAtFirstHold = window.answeredPolls; }); \
    document.body.addEventListener('htmx:afterRequest', function () { window.answeredPolls += 1; });";

async fn the_share_page_asks_nothing_while_its_tab_is_hidden(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (browser, share) = signed_in(&app, BrowserOptions::desktop(), "hidden@example.test").await;
    browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;
    browser.wait_for("#share-live[data-poll]", DEFAULT_WAIT).await;
    browser.execute(FAKE_HIDDEN_TAB).await;
    // Two polls held back in a row, and none answered between them.
    browser.wait_for_js("window.heldPolls >= 2", POLL_WAIT).await;
    let answered = browser.execute("return [window.answeredAtFirstHold, window.answeredPolls];").await;
    assert_eq!(answered[0], answered[1], "a hidden tab polled: {answered}");
    browser.execute("window.fakeHidden = false;").await;
    browser.wait_for_js("window.answeredPolls > window.answeredAtFirstHold", POLL_WAIT).await;
    browser.close().await;
    app.stop().await;
}

async fn a_focused_button_keeps_its_focus_while_the_share_page_refreshes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (browser, share) = signed_in(&app, BrowserOptions::desktop(), "focus@example.test").await;
    browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;
    browser.wait_for("#share-live[data-poll]", DEFAULT_WAIT).await;
    browser.check_page().await;
    browser.execute(COUNT_POLLS).await;
    browser.mark_document().await;
    let button = "#share-actions form[action$='/link'] button";
    browser
        .execute_with(
            "const b = document.querySelector(arguments[0]); b.focus(); window.focusedButton = b;",
            vec![Value::from(button)],
        )
        .await;

    // The recipient opens the link: the next poll brings the new timeline.
    assert_eq!(app.browser().open_link(&share.token).await.status, 200);
    browser.wait_for("#share-live .timeline li[data-kind=opened]", POLL_WAIT).await;
    assert!(browser.execute("return window.answeredPolls;").await.as_u64().unwrap() >= 1);
    let kept = browser
        .execute("return document.activeElement === window.focusedButton && document.contains(window.focusedButton);")
        .await;
    assert_eq!(
        kept,
        json!(true),
        "focus moved to {:?}",
        browser.execute("return document.activeElement.outerHTML;").await
    );
    assert!(browser.document_is_marked().await, "the page was reloaded");
    assert_eq!(browser.attr("#share-status", "aria-live").await.as_deref(), Some("polite"));
    browser.check_page().await;
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
    app.stop().await;
}

async fn ending_a_share_asks_first_with_javascript_on_and_off(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = &Lang::En.text().dashboard;
    let rounds = [(true, BrowserOptions::desktop()), (false, BrowserOptions::desktop().without_javascript())];
    for (javascript, options) in rounds {
        let (browser, share) = signed_in(&app, options, &format!("revoke-js-{javascript}@example.test")).await;
        browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;
        browser.click("a[data-revoke]").await;
        wait_for_path(&browser, &format!("/shares/{}/revoke", share.id)).await;
        assert_eq!(browser.text("main h1").await, s.revoke_confirm_title, "javascript {javascript}");
        assert_eq!(
            app.browser().get(&format!("/s/{}", share.token)).await.status,
            200,
            "ended before the confirmation"
        );
        browser.screenshot(&format!("sender-revoke-confirm-js-{javascript}")).await;
        if javascript {
            browser.check_page().await;
        }
        browser.click("main form button.button-danger").await;
        browser.wait_for("[data-notice]", DEFAULT_WAIT).await;
        assert_eq!(browser.text("[data-notice]").await, s.revoked_notice);
        assert_eq!(browser.attr("#share-status [data-status]", "data-status").await.as_deref(), Some("revoked"));
        assert_eq!(app.browser().get(&format!("/s/{}", share.token)).await.status, 404);
        browser.close().await;
    }
    app.stop().await;
}

async fn the_drop_zone_names_the_file_and_refuses_one_over_the_limit_before_sending(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = 4 * 1024).await;
    let s = &Lang::En.text().dashboard;
    let files = tempfile::tempdir().unwrap();
    let (big, small) = (files.path().join("big-plan.bin"), files.path().join("small-plan.txt"));
    std::fs::write(&big, vec![7u8; 10 * 1024]).unwrap();
    std::fs::write(&small, b"a small plan").unwrap();
    let (browser, _) = signed_in(&app, BrowserOptions::desktop(), "drop@example.test").await;
    browser.goto(&format!("{}/shares/new", app.base)).await;
    browser.wait_for(".drop-zone.is-enhanced", DEFAULT_WAIT).await;
    assert_eq!(browser.text("[data-drop-chosen]").await, s.drop_none);
    assert!(browser.text(".drop-zone").await.contains(s.drop_choose));

    browser.fill("#recipient", "client@example.test").await;
    browser.find("input[type=file]").await.send_keys(big.to_str().unwrap()).await.expect("choosing the file");
    assert_eq!(browser.text("[data-drop-chosen]").await, "big-plan.bin (10 KB)");
    let refusal = s.file_over_limit.replace("{size}", "10 KB").replace("{limit}", "4.1 KB");
    assert_eq!(browser.text("#file-error").await, refusal);
    assert_eq!(browser.attr("#file", "aria-invalid").await.as_deref(), Some("true"));
    assert!(browser.attr("#file", "aria-describedby").await.unwrap().contains("file-error"));
    browser.mark_document().await;
    browser.click("main form[data-upload] button[type=submit]").await;
    assert!(browser.document_is_marked().await, "the form was sent");
    assert_eq!(browser.current_path().await, "/shares/new");
    assert_eq!(count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await, 0, "an upload started");
    assert_eq!(browser.attr("#uploader", "hidden").await.as_deref(), Some("true"));
    browser.screenshot("sender-drop-zone-too-large").await;
    browser.check_page().await;

    // A new choice replaces the old one in a person's picker; the driver adds to a `multiple` input.
    browser.execute("document.getElementById('file').value = ''; return null;").await;
    browser.find("input[type=file]").await.send_keys(small.to_str().unwrap()).await.expect("choosing the file");
    assert_eq!(browser.text("[data-drop-chosen]").await, "small-plan.txt (12 bytes)");
    assert_eq!(browser.attr("#file-error", "hidden").await.as_deref(), Some("true"));
    assert!(browser.attr("#file", "aria-invalid").await.is_none());
    browser.click("main form[data-upload] button[type=submit]").await;
    browser.wait_for("#share-link", Duration::from_secs(30)).await;
    assert!(browser.current_path().await.ends_with("/created"));
    browser.check_page().await;
    browser.goto(&format!("{}/shares", app.base)).await;
    browser.check_page().await;
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;

    // Without JavaScript the browser's own file button shows inside the zone.
    let plain = BrowserSession::start(BrowserOptions::desktop().without_javascript().language("en")).await;
    plain.goto(&format!("{}/login", app.base)).await;
    plain.fill("#email", "drop@example.test").await;
    plain.fill("#password", PASSWORD).await;
    plain.click("main form button[type=submit]").await;
    wait_for_path(&plain, "/shares").await;
    plain.goto(&format!("{}/shares/new", app.base)).await;
    let width = plain.execute("return document.getElementById('file').getBoundingClientRect().width;").await;
    assert!(width.as_f64().unwrap() > 100.0, "the file input is hidden without JavaScript: {width}");
    assert!(plain.text(".drop-zone").await.contains(s.drop_choose));
    plain.close().await;
    app.stop().await;
}

async fn disabling_a_member_asks_first_and_the_team_page_says_it_was_done(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin-pages@example.test").await;
    let member = app.create_sender_with_password("member@example.test", "Member Mori", PASSWORD).await;
    let s = &Lang::Ja.text().admin;
    for javascript in [true, false] {
        let options =
            if javascript { BrowserOptions::desktop() } else { BrowserOptions::desktop().without_javascript() };
        let browser = BrowserSession::start(options).await;
        browser.goto(&format!("{}/login", app.base)).await;
        browser.fill("#email", "admin-pages@example.test").await;
        browser.fill("#password", PASSWORD).await;
        browser.click("main form button[type=submit]").await;
        wait_for_path(&browser, "/shares").await;
        browser.goto(&format!("{}/team", app.base)).await;
        if javascript {
            browser.check_page().await;
            browser.click(&format!("[data-member='{member}'] a[data-delete]")).await;
            wait_for_path(&browser, &format!("/team/{member}/delete")).await;
            assert_eq!(browser.text("main h1").await, s.delete_confirm_title);
            browser.check_page().await;
            browser.click("a[data-cancel]").await;
            wait_for_path(&browser, "/team").await;
        } else {
            browser.click(&format!("[data-member='{member}'] a[data-disable]")).await;
            wait_for_path(&browser, &format!("/team/{member}/disable")).await;
            assert_eq!(browser.text("main h1").await, s.disable_confirm_title);
            browser.click("main form button.button-danger").await;
            browser.wait_for("[data-notice]", DEFAULT_WAIT).await;
            assert_eq!(browser.text("[data-notice]").await, s.disabled_notice);
            assert_eq!(
                browser.attr(&format!("[data-member='{member}']"), "data-disabled").await.as_deref(),
                Some("true")
            );
        }
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(
    the_share_page_asks_nothing_while_its_tab_is_hidden,
    a_focused_button_keeps_its_focus_while_the_share_page_refreshes,
    ending_a_share_asks_first_with_javascript_on_and_off,
    the_drop_zone_names_the_file_and_refuses_one_over_the_limit_before_sending,
    disabling_a_member_asks_first_and_the_team_page_says_it_was_done
);
