//! The share list's filter by outcome: plain links with `?status=`, applied by the database (so a
//! page holds 25 shares of that outcome, not 25 shares thinned out), kept on the "older" link,
//! the shown choice marked; an unknown value shows every share with "all" marked.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, TestShare},
};

const SENDER: &str = "filter@example.test";

async fn english(browser: &Browser, path: &str) -> Page {
    browser.get_with(path, &[("Accept-Language", "en")]).await
}

/// The ids of the shares the list shows, top to bottom.
fn shown(page: &Page) -> Vec<i64> {
    let selector = scraper::Selector::parse(".share-row a").unwrap();
    let html = page.html();
    let hrefs = html.select(&selector).map(|a| a.value().attr("href").unwrap().to_owned());
    hrefs.map(|href| href.rsplit('/').next().unwrap().parse().unwrap()).collect()
}

fn current_filter(page: &Page) -> Vec<String> {
    page.texts(".list-filter a[aria-current=page]")
}

async fn shares(app: &TestApp, sender: i64, n: usize) -> Vec<TestShare> {
    let mut shares = Vec::new();
    for _ in 0..n {
        shares.push(app.fake_share().sender(sender).quiet().create().await);
    }
    shares
}

async fn each_outcome_filters_the_list_to_its_own_shares(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let [waiting, locked, downloaded, expired, revoked] = shares(&app, sender, 5).await.try_into().ok().unwrap();
    app.set_ago("shares", &["locked_at"], 0, &format!("id = {}", locked.id)).await;
    app.set_ago("shares", &["consumed_at"], 0, &format!("id = {}", downloaded.id)).await;
    app.expire_share(expired.id).await;
    app.set_ago("shares", &["revoked_at"], 0, &format!("id = {}", revoked.id)).await;
    let browser = app.sign_in(SENDER, PASSWORD).await;
    let t = Lang::En.text();

    let all = english(&browser, "/shares").await;
    assert_eq!(shown(&all), [revoked.id, expired.id, downloaded.id, locked.id, waiting.id]);
    assert_eq!(current_filter(&all), [t.dashboard.list.filter_all]);
    for (code, share, words) in [
        ("waiting", &waiting, t.dashboard.status_waiting),
        ("locked", &locked, t.dashboard.status_locked),
        ("downloaded", &downloaded, t.dashboard.status_downloaded),
        ("expired", &expired, t.dashboard.status_expired),
        ("revoked", &revoked, t.dashboard.status_revoked),
    ] {
        let page = english(&browser, &format!("/shares?status={code}")).await;
        assert_eq!(shown(&page), [share.id], "{code}");
        assert_eq!(current_filter(&page), [words], "{code}");
        assert_eq!(
            page.attr(&format!(".list-filter a[href$='/shares?status={code}']"), "aria-current").as_deref(),
            Some("page")
        );
    }
    let none = english(&browser, "/shares?status=deleted").await;
    assert!(shown(&none).is_empty());
    assert_eq!(none.texts("[data-filtered-empty]"), [t.dashboard.list.filtered_empty]);
    assert!(none.texts(".list-filter a").len() > 1, "the filter stays, so the sender can leave it");
}

async fn the_filter_is_applied_before_a_page_is_cut(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let made = shares(&app, sender, 28).await;
    // Every other share locked: a filter applied to a fetched page of 25 would show only some.
    app.set_ago("shares", &["locked_at"], 0, "id % 2 = 0").await;
    let newest_first = |parity| made.iter().rev().map(|s| s.id).filter(|id| id % 2 == parity).collect::<Vec<_>>();
    let browser = app.sign_in(SENDER, PASSWORD).await;

    for (code, parity) in [("locked", 0), ("waiting", 1)] {
        let page = english(&browser, &format!("/shares?status={code}")).await;
        assert_eq!(shown(&page), newest_first(parity), "{code}");
        assert!(page.attr("[data-older]", "href").is_none(), "{code}: 14 shares fit on one page");
    }
    let all = english(&browser, "/shares").await;
    let older = all.attr("[data-older]", "href").expect("28 shares take two pages");
    assert!(!older.contains("status="), "{older}");
}

async fn the_older_link_of_a_filtered_list_keeps_the_filter(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let made = shares(&app, sender, 27).await;
    let first_waiting = made[0].id;
    // All but the oldest are locked: 26 locked shares, one page and one more.
    app.set_ago("shares", &["locked_at"], 0, &format!("id <> {first_waiting}")).await;
    let browser = app.sign_in(SENDER, PASSWORD).await;

    let first = english(&browser, "/shares?status=locked").await;
    assert_eq!(shown(&first).len(), 25);
    let older = first.attr("[data-older]", "href").expect("26 locked shares take two pages");
    assert!(older.contains("status=locked&before="), "{older}");
    let second = english(&browser, older.strip_prefix(&app.base).unwrap_or(&older)).await;
    assert_eq!(shown(&second), [made[1].id], "the waiting share is never shown");
    assert_eq!(current_filter(&second), [Lang::En.text().dashboard.status_locked]);
}

async fn an_unknown_status_shows_every_share_with_all_marked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let [one, two] = shares(&app, sender, 2).await.try_into().ok().unwrap();
    app.set_ago("shares", &["locked_at"], 0, &format!("id = {}", one.id)).await;
    let browser = app.sign_in(SENDER, PASSWORD).await;

    let page = english(&browser, "/shares?status=nonsense").await;
    assert_eq!(page.status, 200);
    assert_eq!(shown(&page), [two.id, one.id]);
    assert_eq!(current_filter(&page), [Lang::En.text().dashboard.list.filter_all]);
}

both_backends!(
    each_outcome_filters_the_list_to_its_own_shares,
    the_filter_is_applied_before_a_page_is_cut,
    the_older_link_of_a_filtered_list_keeps_the_filter,
    an_unknown_status_shows_every_share_with_all_marked,
);
