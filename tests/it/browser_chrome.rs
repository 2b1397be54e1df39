//! The header and the tap targets in a real Chromium: on a 390 px phone the admin's navigation
//! takes one row with its menu, every control of the sender's pages is at least 24×24 px (on a
//! desktop too), and with JavaScript the browser's time zone is adopted at sign-in and offered on
//! the account page.

use serde_json::{Value, json};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

/// A zone unlike the machine's, so an adopted or offered zone can only be the browser's.
const BROWSER_ZONE: &str = "Pacific/Auckland";

/// The rows the header's navigation takes: distinct tops of its visible links and summary.
const NAV_ROWS: &str = "
    const items = [...document.querySelectorAll('.dashboard-nav a, .dashboard-nav summary')]
      .filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect());
    return new Set(items.map(r => Math.round(r.top))).size;";

/// Every visible control smaller than 24×24 CSS pixels, as `tag.class "text" W×H`.
const SMALL_TARGETS: &str = "
    return [...document.querySelectorAll('a, button, input, select, summary')]
      .filter(e => e.type !== 'hidden' && e.checkVisibility())
      .map(e => [e, e.getBoundingClientRect()])
      // A visually hidden input (the drop zone's file input) is reached through its label.
      .map(([e, r]) => [e, r.width <= 2 && e.labels && e.labels.length ? e.labels[0].getBoundingClientRect() : r])
      .filter(([e, r]) => r.width > 0 && r.height > 0 && (r.width < 24 || r.height < 24))
      .map(([e, r]) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' \"'
        + (e.textContent || e.name || '').trim().slice(0, 30) + '\" ' + Math.round(r.width) + 'x' + Math.round(r.height));";

/// Whether the first element matching `css` is rendered (not in a closed `<details>`, not hidden).
async fn shown(browser: &BrowserSession, css: &str) -> bool {
    let script = "const e = document.querySelector(arguments[0]); return !!e && e.checkVisibility();";
    browser.execute_with(script, vec![Value::from(css)]).await == Value::Bool(true)
}

async fn wait_for_path(browser: &BrowserSession, path: &str) {
    browser.wait_until(&format!("the page at {path}"), DEFAULT_WAIT, async |b| b.current_path().await == path).await;
}

/// Opens `path` and panics on any control under 24×24 px, with the nav menu open too.
async fn assert_tap_targets(browser: &BrowserSession, base: &str, path: &str) {
    browser.goto(&format!("{base}{path}")).await;
    browser.execute("document.querySelectorAll('details').forEach(d => d.open = true); return null;").await;
    let small = browser.execute(SMALL_TARGETS).await;
    assert_eq!(small, json!([]), "{path}: controls under 24×24 px");
    browser.assert_no_horizontal_overflow(path).await;
}

/// The pages a signed-in admin reaches from the header, and a share's page.
fn sender_pages(share_id: i64) -> Vec<String> {
    let fixed = ["/shares", "/shares/new", "/account", "/team", "/admin/maintenance", "/admin/deletions"];
    fixed.iter().map(|p| (*p).to_owned()).chain([format!("/shares/{share_id}")]).collect()
}

async fn an_admin_on_a_phone_gets_a_compact_header_large_targets_and_their_zone(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let admin_id = app.create_admin("admin@example.test").await;
    let share = app.fake_share().sender(admin_id).recipient("r@example.test").file("a.txt", b"x").create().await;
    let browser = BrowserSession::start(BrowserOptions::phone().language("en")).await;
    browser.cdp("Emulation.setTimezoneOverride", json!({ "timezoneId": BROWSER_ZONE })).await;

    // Sign in with JavaScript: the form carries the browser's zone, which the account adopts.
    browser.goto(&format!("{}/login", app.base)).await;
    browser.fill("#email", "admin@example.test").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("main form button[type=submit]").await;
    wait_for_path(&browser, "/shares").await;

    // Seven admin links and the sign-out: two everyday links in view, the rest in a menu.
    assert_eq!(browser.execute(NAV_ROWS).await, json!(1), "the closed navigation takes more than a row");
    assert_eq!(browser.attr(".dashboard-nav a[href='/shares']", "aria-current").await.as_deref(), Some("page"));
    let marker = "return getComputedStyle(document.querySelector('.nav-more > summary')).display;";
    assert_eq!(browser.execute(marker).await, json!("list-item"), "the menu's marker is hidden");
    browser.assert_no_horizontal_overflow("the header").await;
    assert!(!shown(&browser, ".nav-more a[href='/team']").await, "the menu is open before a tap");
    browser.click(".nav-more > summary").await;
    assert!(shown(&browser, ".nav-more a[href='/team']").await, "the menu did not open");
    assert!(shown(&browser, ".nav-more form.sign-out button").await);
    browser.assert_no_horizontal_overflow("the open menu").await;
    browser.screenshot("chrome-1-phone-menu").await;
    browser.goto(&format!("{}/shares?lang=ja", app.base)).await;
    assert_eq!(browser.execute(NAV_ROWS).await, json!(1), "the Japanese navigation takes more than a row");
    browser.assert_no_horizontal_overflow("the Japanese header").await;
    browser.goto(&format!("{}/shares?lang=en", app.base)).await;

    for path in sender_pages(share.id) {
        assert_tap_targets(&browser, &app.base, &path).await;
    }

    // The adopted zone names the times; going back to the language's default, the account
    // page offers the browser's zone again (the script selects it, nothing is saved).
    let times = browser.execute("return [...document.querySelectorAll('dl.facts dd')].map(d => d.textContent);").await;
    assert!(times.as_array().unwrap().iter().any(|t| t.as_str().unwrap().contains(BROWSER_ZONE)), "{times}");
    browser.goto(&format!("{}/account", app.base)).await;
    assert_eq!(browser.execute("return document.getElementById('time_zone').value;").await, json!(BROWSER_ZONE));
    browser.execute("document.getElementById('time_zone').value = ''; return null;").await;
    browser.click("form[action='/account/time-zone'] button[type=submit]").await;
    wait_for_path(&browser, "/account?saved=time-zone").await;
    let offered = "const s = document.getElementById('time_zone'); \
                   return [s.value, document.getElementById('time-zone-from-browser').hidden];";
    assert_eq!(browser.execute(offered).await, json!([BROWSER_ZONE, false]));
    let stored =
        crate::support::count(app.db(), "SELECT count(*) FROM users WHERE id = $1 AND time_zone IS NULL", admin_id)
            .await;
    assert_eq!(stored, 1, "offering the zone saved it");
    browser.screenshot("chrome-2-phone-account").await;
    browser.close().await;
}

async fn the_whole_navigation_shows_in_the_row_on_a_desktop(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let admin_id = app.create_admin("admin@example.test").await;
    let share = app.fake_share().sender(admin_id).recipient("r@example.test").file("a.txt", b"x").create().await;
    let browser = BrowserSession::start(BrowserOptions::desktop().without_javascript().language("ja")).await;
    browser.goto(&format!("{}/login", app.base)).await;
    browser.fill("#email", "admin@example.test").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("main form button[type=submit]").await;
    wait_for_path(&browser, "/shares").await;
    for link in ["/team", "/admin/maintenance", "/admin/deletions", "/account"] {
        assert!(shown(&browser, &format!(".dashboard-nav a[href='{link}']")).await, "{link} is hidden on a desktop");
    }
    assert!(shown(&browser, ".dashboard-nav form.sign-out button").await);
    let rows = browser.execute(NAV_ROWS).await;
    assert!(rows.as_u64().is_some_and(|rows| rows <= 2), "{rows}");
    browser.screenshot("chrome-3-desktop-header").await;
    for path in sender_pages(share.id) {
        assert_tap_targets(&browser, &app.base, &path).await;
    }
    browser.close().await;
}

both_backends!(
    an_admin_on_a_phone_gets_a_compact_header_large_targets_and_their_zone,
    the_whole_navigation_shows_in_the_row_on_a_desktop
);
