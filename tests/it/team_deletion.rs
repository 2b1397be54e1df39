//! A member a deletion case has started on is on the way out: the team page offers no "enable"
//! for them, and the enable page and form refuse them too.

use crate::{
    both_backends,
    deletion::fixtures::{admin_case, runner},
    support::{Backend, PASSWORD, TestApp},
};

const ADMIN: &str = "admin@example.test";

async fn a_member_being_deleted_is_not_offered_to_be_enabled(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    app.create_admin(ADMIN).await;
    let admin = app.sign_in(ADMIN, PASSWORD).await;
    let member = app.create_sender_with_password("leaving@example.test", "Leaving", PASSWORD).await;
    let team = admin.get("/team").await;
    let disabled = admin.post_form(&format!("/team/{member}/disable"), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(disabled.header("location"), Some("/team?done=disabled"));
    let before = admin.get("/team").await;
    let enable_link = format!("[data-member='{member}'] [data-enable]");
    assert!(before.attr(&enable_link, "href").is_some(), "a disabled member without a case can be enabled");

    admin_case(&runner(&app, "team-test"), member).await;

    let after = admin.get("/team").await;
    assert_eq!(after.attr(&format!("[data-member='{member}']"), "data-disabled").as_deref(), Some("true"));
    assert_eq!(after.attr(&enable_link, "href"), None, "{}", after.body);
    let asked = admin.get(&format!("/team/{member}/enable")).await;
    assert_eq!(asked.header("location"), Some("/team"), "the enable page asked about a member being deleted");
    let forced = admin.post_form(&format!("/team/{member}/enable"), &[("csrf_token", &after.csrf_token())]).await;
    assert_eq!(forced.header("location"), Some("/team"), "the server enabled a member being deleted");
    assert_eq!(
        app.browser().sign_in("leaving@example.test", PASSWORD).await.status,
        200,
        "a member being deleted signed in"
    );
}

both_backends!(a_member_being_deleted_is_not_offered_to_be_enabled);
