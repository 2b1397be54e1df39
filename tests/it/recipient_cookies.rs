//! A recipient whose form comes back without its cookie, or with a token it no longer accepts,
//! meets a page in the recipient's words with a button that opens the link page afresh (not the
//! sender pages' "the form expired or was sent from another site" and a way back into the same
//! stale form); without any cookie the page says it needs them. Sender pages keep their words.

use watasu::i18n::Lang;

use crate::support::{Backend, PASSWORD, RECIPIENT, TestApp};

async fn a_link_form_without_its_cookie_says_the_page_needs_cookies_and_reopens_the_link(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let link = format!("/s/{}", share.token);
    let (visitor, other) = (app.browser(), app.browser());
    let token = visitor.get(&link).await.csrf_token();
    let others_token = other.get(&link).await.csrf_token();

    let cookieless =
        app.browser().post_form(&format!("{link}/email"), &[("csrf_token", &token), ("email", RECIPIENT)]).await;
    let stale = visitor.post_form(&format!("{link}/code/new"), &[("csrf_token", &others_token)]).await;
    let english = [("Sec-Fetch-Site", "same-origin"), ("Accept-Language", "en")];
    let stale_en =
        visitor.post_form_with(&format!("{link}/email"), &[("csrf_token", "x"), ("email", RECIPIENT)], &english).await;

    let errors = &Lang::Ja.text().errors;
    assert_eq!(cookieless.status, 403);
    assert_eq!(cookieless.texts("h1"), [errors.link_form_needs_cookies.title]);
    assert_eq!(stale.status, 403);
    assert_eq!(stale.texts("h1"), [errors.link_form_stale.title]);
    for page in [&cookieless, &stale] {
        assert_eq!(page.attr(".card-error a.button", "href"), Some(link.clone()));
        assert_eq!(page.texts(".card-error a.button"), [errors.reopen_link]);
        assert!(!page.body.contains(errors.forbidden.body), "the sender pages' words");
    }
    assert_eq!(stale_en.texts("h1"), [Lang::En.text().errors.link_form_stale.title]);
}

async fn a_sender_form_without_its_token_keeps_the_sender_pages_words(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;

    let refused = sender.post_form("/account/password", &[("csrf_token", "wrong")]).await;

    assert_eq!(refused.status, 403);
    assert_eq!(refused.texts("h1"), [Lang::Ja.text().errors.forbidden.title]);
}

crate::both_backends!(
    a_link_form_without_its_cookie_says_the_page_needs_cookies_and_reopens_the_link,
    a_sender_form_without_its_token_keeps_the_sender_pages_words
);
