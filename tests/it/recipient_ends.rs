//! The pages that end the recipient's flow lead somewhere: "already downloaded in this browser" is
//! good news in a calm card; the gone, locked and expired pages of a link that names a share offer
//! to write to its sender; a page for a link that names no share names no one.

use watasu::{db::Sql, i18n::Lang};

use crate::support::{Backend, Page, TestApp, TestShare, execute};

const SENDER_EMAIL: &str = "hanako.sato@example.test";
const SENDER_NAME: &str = "佐藤 花子";

async fn share_from_hanako(app: &TestApp) -> TestShare {
    let sender = app.create_sender(SENDER_EMAIL, SENDER_NAME).await;
    app.fake_share().sender(sender).create().await
}

/// Another share from the same sender.
async fn another_share(app: &TestApp, share: &TestShare) -> TestShare {
    app.fake_share().sender(share.sender_id).create().await
}

/// The end page's card: its classes and role.
fn card(page: &Page) -> (String, String) {
    (page.attr("section.card", "class").unwrap_or_default(), page.attr("section.card", "role").unwrap_or_default())
}

fn assert_writes_to_hanako(page: &Page, lang: Lang) {
    assert_eq!(page.attr("a.write-to", "href").as_deref(), Some(&*format!("mailto:{SENDER_EMAIL}")), "{}", page.body);
    let words = lang.text().recipient.write_to.replace('|', "").replace("{sender}", SENDER_NAME);
    assert_eq!(page.texts("a.write-to"), [words]);
}

async fn downloaded_here_is_good_news_in_a_calm_card_and_every_gone_page_offers_to_write_to_the_sender(
    backend: Backend,
) {
    let app = TestApp::spawn(backend).await;
    let share = share_from_hanako(&app).await;
    let (browser, csrf) = app.verified_browser(&share).await;
    assert_eq!(browser.download(&share.token, &csrf).await.status(), 200);

    let own = browser.open_link(&share.token).await;
    let stranger = app.browser().get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;

    assert_eq!(own.status, 410);
    assert_eq!(card(&own), ("card".to_owned(), "status".to_owned()), "good news in an error card");
    assert_writes_to_hanako(&own, Lang::Ja);
    assert_eq!(stranger.status, 410);
    assert_eq!(card(&stranger), ("card card-error".to_owned(), "alert".to_owned()));
    assert_writes_to_hanako(&stranger, Lang::En);
}

async fn the_locked_and_the_expired_pages_offer_to_write_to_the_sender(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let locked = share_from_hanako(&app).await;
    let expired = another_share(&app, &locked).await;
    let lock = "UPDATE shares SET locked_at = expires_at WHERE id = $1";
    execute(app.db(), Sql::same(lock), locked.id).await;
    app.expire_share(expired.id).await;

    let locked_page = app.browser().open_link(&locked.token).await;
    let expired_page = app.browser().open_link(&expired.token).await;

    let errors = &Lang::Ja.text().errors;
    assert_eq!(locked_page.status, 403);
    assert_eq!(locked_page.texts("h1"), [errors.share_locked.title]);
    assert_writes_to_hanako(&locked_page, Lang::Ja);
    assert_eq!(expired_page.status, 404);
    assert_eq!(expired_page.texts("h1"), [errors.share_not_available.title]);
    assert_writes_to_hanako(&expired_page, Lang::Ja);
    for page in [&locked_page, &expired_page] {
        assert_eq!(card(page).0, "card card-error");
        assert!(page.texts("a[href='/']").iter().all(|t| t != errors.back_home), "still only the start page");
    }
}

async fn a_link_that_names_no_share_names_no_one(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    share_from_hanako(&app).await;

    let unknown = app.browser().open_link(&"0".repeat(64)).await;
    let malformed = app.browser().open_link("not-a-token").await;

    for page in [&unknown, &malformed] {
        assert_eq!(page.status, 404);
        assert!(page.attr("a.write-to", "href").is_none());
        assert!(!page.body.contains(SENDER_NAME) && !page.body.contains(SENDER_EMAIL), "{}", page.body);
    }
}

crate::both_backends!(
    downloaded_here_is_good_news_in_a_calm_card_and_every_gone_page_offers_to_write_to_the_sender,
    the_locked_and_the_expired_pages_offer_to_write_to_the_sender,
    a_link_that_names_no_share_names_no_one
);
