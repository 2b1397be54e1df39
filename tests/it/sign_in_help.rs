//! The sign-in page's ways out of a dead end: a throttled sign-in says how many minutes to wait
//! (the same wait its Retry-After gives, rounded up), the page says who helps with a forgotten
//! password without naming anyone, and its footer does not link to the page itself.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp},
};

async fn a_throttled_sign_in_says_how_many_minutes_to_wait(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("owner@example.test", "Owner", PASSWORD).await;
    let browser = app.browser();
    let csrf = browser.get_with("/login", &[("Accept-Language", "en")]).await.csrf_token();
    let fields = [("csrf_token", csrf.as_str()), ("email", "owner@example.test"), ("password", "a wrong guess")];
    let mut refused = None;
    for _ in 0..30 {
        let page = browser.post_form_with("/login", &fields, &[("Accept-Language", "en")]).await;
        if page.status == 429 {
            refused = Some(page);
            break;
        }
    }
    let page = refused.expect("thirty wrong passwords in a row were never slowed down");

    let seconds: u64 = page.header("retry-after").expect("a Retry-After").parse().unwrap();
    let errors = &Lang::En.text().errors;
    let expected = match seconds.div_ceil(60) {
        1 => errors.too_many_wait_minute.to_owned(),
        minutes => errors.too_many_wait_minutes.replace("{n}", &minutes.to_string()),
    };
    assert_eq!(page.texts("[data-wait]"), [expected], "{}", page.body);
    app.stop().await;
}

async fn the_sign_in_page_says_who_helps_with_a_forgotten_password_and_does_not_link_to_itself(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("owner@example.test", "Owner", PASSWORD).await;
    for lang in Lang::ALL {
        let page = app.browser().get_with("/login", &[("Accept-Language", lang.code())]).await;
        assert_eq!(page.texts("[data-forgotten]"), [lang.text().auth.login_forgotten], "{}", page.body);
        assert!(!page.body.contains("owner@example.test"), "the sign-in page names an account");
        assert_eq!(page.attr("footer a[href='/login']", "href"), None, "the footer links to the page it is on");
        let home = app.browser().get_with("/", &[("Accept-Language", lang.code())]).await;
        assert_eq!(home.attr("footer a[href='/login']", "href").as_deref(), Some("/login"), "{}", home.body);
    }
    app.stop().await;
}

both_backends!(a_throttled_sign_in_says_how_many_minutes_to_wait);
both_backends!(the_sign_in_page_says_who_helps_with_a_forgotten_password_and_does_not_link_to_itself);
