//! What every page shares, over HTTP: the signed-in header (navigation, the current page, sign-out),
//! the favicon, error pages that lead back, and account forms that keep what was typed and tie
//! their errors to the fields.

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp, http::Page},
};

/// The `aria-current` of the header's link to `href`.
fn current_mark(page: &Page, href: &str) -> Option<String> {
    page.attr(&format!(".dashboard-nav a[href='{href}']"), "aria-current")
}

async fn every_signed_in_page_has_the_navigation_with_its_page_marked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let admin_id = app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    for (path, marked) in [
        ("/shares", "/shares"),
        ("/shares/new", "/shares/new"),
        ("/account", "/account"),
        ("/team", "/team"),
        ("/admin/maintenance", "/admin/maintenance"),
        ("/admin/deletions", "/admin/deletions"),
    ] {
        let page = admin.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        assert_eq!(current_mark(&page, marked).as_deref(), Some("page"), "{path}");
        let marks = page.html().select(&scraper::Selector::parse(".dashboard-nav [aria-current]").unwrap()).count();
        assert_eq!(marks, 1, "{path}: one link is the current page");
        assert_eq!(page.attr(".dashboard-nav form.sign-out", "method").as_deref(), Some("post"), "{path}");
        assert_eq!(page.attr(".dashboard-nav form.sign-out", "action").as_deref(), Some("/logout"), "{path}");
        assert_eq!(page.attr("a.brand", "href").as_deref(), Some("/shares"), "{path}");
        assert!(
            page.texts(".site-footer a[href='/login']").is_empty(),
            "{path}: a sign-in link for a signed-in sender"
        );
    }
    let share = app.fake_share().sender(admin_id).recipient("r@example.test").file("a.txt", b"x").create().await;
    let below = admin.get(&format!("/shares/{}", share.id)).await;
    assert_eq!(current_mark(&below, "/shares").as_deref(), Some("true"), "a share's page belongs to the list");
}

async fn a_sender_signs_out_from_the_header_of_any_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let page = sender.get("/shares/new").await;
    assert!(page.texts(".dashboard-nav a[href='/team']").is_empty(), "a sender sees the admin links");
    let token = page.attr(".dashboard-nav form.sign-out input[name=csrf_token]", "value").expect("a token");
    let out = sender.post_form("/logout", &[("csrf_token", &token)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(sender.get("/shares").await.header("location"), Some("/login"), "still signed in");
}

async fn anonymous_pages_link_the_start_and_only_senders_pages_offer_sign_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.browser();
    let home = browser.get("/").await;
    assert_eq!(home.attr("a.brand", "href").as_deref(), Some("/"));
    assert!(home.texts(".dashboard-nav").is_empty());
    assert_eq!(home.texts(".site-footer a[href='/login']").len(), 1);
    let share = app.create_share().await;
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    assert_eq!(landing.status, 200);
    assert!(landing.texts("a[href='/login']").is_empty(), "a recipient page offers the sender sign-in");
}

async fn the_favicon_is_linked_and_served(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.browser();
    let home = browser.get("/").await;
    let href = home.attr("link[rel=icon]", "href").expect("an icon link");
    for path in [href.as_str(), "/favicon.ico"] {
        let icon = browser.get(path).await;
        assert_eq!(icon.status, 200, "{path}");
        assert_eq!(icon.header("content-type"), Some("image/svg+xml"), "{path}");
        assert!(icon.body.starts_with("<svg"), "{path}");
    }
}

async fn a_missing_page_keeps_the_header_and_leads_back_to_the_dashboard(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    for path in ["/nowhere", "/shares/999999", "//evil.example/x"] {
        let page = sender.get(path).await;
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.texts(".dashboard-nav a[href='/shares/new']").len(), 1, "{path}: the header lost its links");
        assert_eq!(page.attr(".card-error a.button", "href").as_deref(), Some("/shares"), "{path}");
    }
    let anonymous = app.browser().get("/nowhere").await;
    assert_eq!(anonymous.attr(".card-error a.button", "href").as_deref(), Some("/"));
}

async fn a_too_large_form_leads_back_to_its_page_with_the_header(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let token = sender.get("/account").await.csrf_token();
    let filler = "x".repeat(100 * 1024);
    let page =
        sender.post_form("/account/password", &[("csrf_token", token.as_str()), ("filler", filler.as_str())]).await;
    assert_eq!(page.status, 413);
    assert_eq!(page.texts(".dashboard-nav a[href='/shares']").len(), 1, "the 413 page lost the header");
    assert_eq!(page.attr(".card-error a.button", "href").as_deref(), Some("/account"));
}

async fn a_rate_limited_sign_in_leads_back_to_the_sign_in_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let browser = app.browser();
    for _ in 1..=5 {
        assert_eq!(browser.sign_in("s@example.test", "not the password at all").await.status, 200);
    }
    let limited = browser.sign_in("s@example.test", PASSWORD).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.attr(".card-error a.button", "href").as_deref(), Some("/login"));
}

async fn a_recipient_error_below_the_link_leads_back_to_the_link(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let page = app.browser().get(&format!("/s/{}/nothing-here", share.token)).await;
    assert_eq!(page.status, 404);
    assert_eq!(page.attr(".card-error a.button", "href"), Some(format!("/s/{}", share.token)));
    assert!(page.texts("a[href='/login']").is_empty());
}

async fn a_refused_setup_keeps_the_values_and_marks_the_field(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let path = app.setup_link.clone().unwrap().strip_prefix(&app.base).unwrap().to_owned();
    let browser = app.browser();
    let form = browser.get(&path).await;
    let fields = [
        ("csrf_token", form.csrf_token()),
        ("name", "管理 太郎".into()),
        ("email", "admin@example.test".into()),
        ("password", "short".into()),
    ];
    let fields: Vec<_> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = browser.post_form(&path, &fields).await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("#name", "value").as_deref(), Some("管理 太郎"));
    assert_eq!(page.attr("#email", "value").as_deref(), Some("admin@example.test"));
    assert_eq!(page.attr("#password", "value"), None, "a password is never sent back");
    assert_eq!(page.attr("#password", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(page.attr("#password", "aria-describedby").as_deref(), Some("password-hint setup-error"));
    assert_eq!(page.attr("#name", "aria-invalid"), None, "the name was fine");
    assert_eq!(page.texts("#setup-error").len(), 1);
}

async fn a_failed_sign_in_marks_both_fields_without_saying_which(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let page = app.browser().sign_in("nobody@example.test", PASSWORD).await;
    assert_eq!(page.attr("#email", "value").as_deref(), Some("nobody@example.test"));
    for field in ["#email", "#password"] {
        assert_eq!(page.attr(field, "aria-invalid").as_deref(), Some("true"), "{field}");
        assert_eq!(page.attr(field, "aria-describedby").as_deref(), Some("login-error"), "{field}");
    }
    assert_eq!(page.attr("#password", "value"), None);
    assert_eq!(page.texts("#login-error[role=alert]").len(), 1);
}

async fn a_refused_invitation_keeps_the_name(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let link = app.invite(&admin, "new@example.test").await;
    let invited = app.browser();
    let form = invited.get(&link).await;
    let page = invited
        .post_form(&link, &[("csrf_token", &form.csrf_token()), ("name", "New Nakamura"), ("password", "short")])
        .await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("#name", "value").as_deref(), Some("New Nakamura"));
    assert_eq!(page.attr("#password", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(page.attr("#password", "aria-describedby").as_deref(), Some("password-hint invite-error"));
}

async fn a_wrong_current_password_marks_that_field(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let account = sender.get("/account").await;
    let fields = [
        ("csrf_token", account.csrf_token()),
        ("current_password", "guess guess guess".into()),
        ("new_password", "violet harbor quietly ninety".into()),
    ];
    let fields: Vec<_> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = sender.post_form("/account/password", &fields).await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("#current_password", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(page.attr("#current_password", "aria-describedby").as_deref(), Some("password-error"));
    assert_eq!(page.attr("#new_password", "aria-invalid"), None);
    assert_eq!(page.attr("#delete_password", "aria-invalid"), None, "the deletion form was not sent");
}

both_backends!(
    every_signed_in_page_has_the_navigation_with_its_page_marked,
    a_sender_signs_out_from_the_header_of_any_page,
    anonymous_pages_link_the_start_and_only_senders_pages_offer_sign_in,
    the_favicon_is_linked_and_served,
    a_missing_page_keeps_the_header_and_leads_back_to_the_dashboard,
    a_too_large_form_leads_back_to_its_page_with_the_header,
    a_rate_limited_sign_in_leads_back_to_the_sign_in_page,
    a_recipient_error_below_the_link_leads_back_to_the_link,
    a_refused_setup_keeps_the_values_and_marks_the_field,
    a_failed_sign_in_marks_both_fields_without_saying_which,
    a_refused_invitation_keeps_the_name,
    a_wrong_current_password_marks_that_field
);
