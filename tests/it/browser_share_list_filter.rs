//! The share list's filter and table in a real Chromium: on a phone each share stays a card and
//! nothing scrolls sideways; on a desktop the same list lines up as a table under its heads. The
//! filter is plain links, followed by their addresses, so it works with JavaScript off. The harness checks each page with axe.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

/// Whether the list is laid out as a table: the heads show, and a row's recipient and its time
/// stand on one line.
const IS_TABLE: &str = "const head = document.querySelector('.share-head'); \
    const row = document.querySelector('.share-row[data-status=waiting]'); \
    const top = (css) => Math.round(row.querySelector(css).getBoundingClientRect().top); \
    return getComputedStyle(head).display !== 'none' \
        && Math.abs(top('.share-recipient') - top('[data-outcome-time]')) < 4;";

async fn the_filter_works_without_javascript_and_the_list_is_a_table_only_on_wide_screens(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::phone(), false),
        (Lang::En, BrowserOptions::phone().language("en").without_javascript(), false),
        (Lang::Ja, BrowserOptions::desktop().without_javascript(), true),
        (Lang::En, BrowserOptions::desktop().language("en"), true),
    ];
    for (round, (lang, options, wide)) in rounds.into_iter().enumerate() {
        let email = format!("filter-{round}@example.test");
        let sender = app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let waiting = app.fake_share().sender(sender).file("plan.pdf", b"plan").create().await;
        let locked = app.fake_share().sender(sender).file("budget-2026.xlsx", b"b").create().await;
        app.set_ago("shares", &["locked_at"], 0, &format!("id = {}", locked.id)).await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;
        let t = lang.text();

        assert_eq!(browser.execute(IS_TABLE).await.as_bool(), Some(wide), "round {round}");
        assert_eq!(browser.text(".list-filter a[aria-current=page]").await, t.dashboard.list.filter_all);
        browser.assert_no_horizontal_overflow("the share list").await;

        // A plain link: followed by its address, as a browser without scripts does.
        let follow = async |css: &str| {
            let href = browser.attr(css, "href").await.expect("a link");
            browser.goto(&format!("{}{}", app.base, href.strip_prefix(&app.base).unwrap_or(&href))).await;
        };
        follow(".list-filter a[href$='?status=locked']").await;
        browser
            .wait_until("the locked shares", DEFAULT_WAIT, async |b| {
                b.current_url().await.query() == Some("status=locked")
            })
            .await;
        assert_eq!(browser.text(".list-filter a[aria-current=page]").await, t.dashboard.status_locked);
        assert_eq!(browser.find_all(".share-row").await.len(), 1, "round {round}");
        assert!(browser.exists(&format!(".share-row a[href$='/shares/{}']", locked.id)).await);
        assert!(!browser.exists(&format!(".share-row a[href$='/shares/{}']", waiting.id)).await);
        browser.assert_no_horizontal_overflow("the locked shares").await;

        follow(".list-filter a[href$='?status=expired']").await;
        browser.wait_for("[data-filtered-empty]", DEFAULT_WAIT).await;
        assert_eq!(browser.text("[data-filtered-empty]").await, t.dashboard.list.filtered_empty);
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_filter_works_without_javascript_and_the_list_is_a_table_only_on_wide_screens);
