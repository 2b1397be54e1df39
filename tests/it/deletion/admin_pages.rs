//! The admin's deletion pages in Japanese: every recorded reason and search key in words, no raw
//! code; the tables' scroll regions reachable from the keyboard, each cell labelled for a phone.

use super::*;
use crate::support::{Backend, PASSWORD, words::cells_with_raw_words};

async fn the_japanese_deletion_pages_show_words_for_every_code_reason_and_key(backend: Backend) {
    let app = deletion_app(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let sender = populate(&app, "leaving@example.test").await;
    let store = store_failing_deletes(&app);
    let failing = impatient_runner(&app, "failing", store.clone(), 1);
    let case = admin_case(&failing, sender.id).await;
    assert_eq!(failing.run_case(case.id).await.unwrap(), Some(CaseState::PartiallyCompleted));

    let list = admin.get("/admin/deletions").await;
    let page = admin.get(&format!("/admin/deletions/{}", case.reference)).await;

    assert_eq!(list.status, 200);
    assert_eq!(page.status, 200);
    let review = list.texts("#needs-review .review-item");
    assert!(review[0].contains("ファイル保存先のエラー"), "{review:?}");
    let reason = |store: &str| page.texts(&format!("[data-store={store}] td[data-label=\"理由\"]"));
    assert_eq!(reason("stored_files"), ["ファイル保存先のエラー"]);
    let keys = page.texts(".evidence-row[data-store=codes] td[data-label=\"検索キー\"]");
    assert_eq!(keys, ["shares.sender_id の共有の otp_challenges.share_id"]);
    for page in [&list, &page] {
        assert_eq!(cells_with_raw_words(page), Vec::<(String, Vec<String>)>::new(), "{}", page.body);
    }
    // Each scrollable table is a named region the keyboard reaches.
    let regions = page.html();
    let selector = scraper::Selector::parse(".table-scroll").unwrap();
    let regions: Vec<_> = regions.select(&selector).collect();
    assert_eq!(regions.len(), 2);
    for region in regions {
        let attr = |name| region.value().attr(name);
        assert_eq!((attr("tabindex"), attr("role")), (Some("0"), Some("region")));
        assert!(attr("aria-label").is_some_and(|l| !l.is_empty()));
    }
}

both_backends!(the_japanese_deletion_pages_show_words_for_every_code_reason_and_key);

/// The admin pages in Chromium: on a phone every table row stacks with each cell's label beside
/// it and nothing reaches past the right edge; on a desktop the page widens for the tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_admin_tables_stack_on_a_phone_and_spread_on_a_desktop() {
    use crate::support::browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT};
    let app = deletion_app(crate::support::Backend::Sqlite).await;
    app.create_admin("admin@example.test").await;
    let sender = populate(&app, "leaving@example.test").await;
    let store = store_failing_deletes(&app);
    let failing = impatient_runner(&app, "failing", store.clone(), 1);
    let case = admin_case(&failing, sender.id).await;
    failing.run_case(case.id).await.unwrap();
    let run =
        app.state.services.maintenance.run_now(watasu::maintenance::Kind::Sessions, watasu::maintenance::Trigger::Cli);
    run.await.unwrap();
    let paths = [
        "/admin/deletions".to_owned(),
        format!("/admin/deletions/{}", case.reference),
        "/admin/maintenance".to_owned(),
    ];

    for (device, options) in [("phone", BrowserOptions::phone()), ("desktop", BrowserOptions::desktop())] {
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, "admin@example.test").await;
        for (n, path) in paths.iter().enumerate() {
            browser.goto(&format!("{}{path}", app.base)).await;
            browser.wait_for(".stack td", DEFAULT_WAIT).await;
            // The case's rows are folded; these checks are about the rows, so they unfold them.
            for fold in browser.find_all("details[data-rows] > summary").await {
                fold.click().await.expect("opening a fold");
            }
            let what = format!("{path} on a {device}");
            browser.assert_no_horizontal_overflow(&what).await;
            let cells = browser
                .execute(
                    "return [...document.querySelectorAll('.stack td')].map(td => [getComputedStyle(td).display, \
                       getComputedStyle(td, '::before').content === JSON.stringify(td.dataset.label)]);",
                )
                .await;
            let cells: Vec<(String, bool)> = serde_json::from_value(cells).unwrap();
            assert!(!cells.is_empty(), "{what}");
            for (display, labelled) in cells {
                let stacked = display == "grid";
                assert_eq!((stacked, labelled), (device == "phone", device == "phone"), "{what}: {display}");
            }
            if device == "desktop" {
                let width =
                    browser.execute("return document.querySelector('main').getBoundingClientRect().width;").await;
                assert!(width.as_f64().unwrap() > 1000.0, "{what}: the page stays narrow ({width} px)");
            }
            let focusable = browser
                .execute("return [...document.querySelectorAll('.table-scroll')].every(r => { r.focus(); return document.activeElement === r; });")
                .await;
            assert_eq!(focusable, serde_json::Value::Bool(true), "{what}: a scroll region the keyboard cannot reach");
            browser.screenshot_full_page(&format!("admin-{device}-{n}")).await;
        }
        browser.close().await;
    }
}
