//! What the team page shows of invitations and disabled members: the notice names who was
//! invited, invitations still waiting are listed with their expiry and can be sent again (a new
//! link; the old one stops working) or cancelled, and a disabled member can be enabled again
//! after a confirmation page.

use std::time::Duration;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp},
};

const ADMIN: &str = "admin@example.test";
const INVITED: &str = "invited@example.test";

async fn english(browser: &Browser, path: &str) -> Page {
    browser.get_with(path, &[("Accept-Language", "en")]).await
}

async fn post_from_team(admin: &Browser, action: &str) -> Page {
    let team = admin.get("/team").await;
    admin.post_form(action, &[("csrf_token", &team.csrf_token())]).await
}

async fn a_waiting_invitation_is_named_listed_sent_again_and_cancelled(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin(ADMIN).await;
    let admin = app.sign_in(ADMIN, PASSWORD).await;
    let a = &Lang::En.text().admin;
    let first_link = app.invite(&admin, INVITED).await;

    let team = english(&admin, "/team").await;
    let id = team.attr("[data-invitation]", "data-invitation").expect("the invitation is listed");
    let after_invite = english(&admin, &format!("/team?done=invited&invitation={id}")).await;
    assert_eq!(after_invite.texts("[data-notice]"), [a.team_invited_to.replace("{email}", INVITED)]);
    let row = format!("[data-invitation='{id}']");
    assert_eq!(team.texts(&format!("{row} .share-recipient")), [INVITED]);
    assert!(team.texts(&format!("{row} [data-expires]"))[0].starts_with("The link works until "), "{}", team.body);

    let before = app.smtp.messages().len();
    let resent = post_from_team(&admin, &format!("/team/invitations/{id}/resend")).await;
    assert_eq!(resent.header("location"), Some(format!("/team?done=resent&invitation={id}").as_str()));
    let mail = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, [INVITED]);
    let notice = english(&admin, resent.header("location").unwrap()).await;
    assert_eq!(notice.texts("[data-notice]"), [a.invitation_resent.replace("{email}", INVITED)]);
    assert_ne!(app.browser().get(&first_link).await.status, 200, "the earlier link still works");
    let text = mail.text();
    let start = text.find("/invite/").expect("the mail carries the new link");
    let second_link = &text[start..start + "/invite/".len() + 64];
    assert_eq!(app.browser().get(second_link).await.status, 200);

    let cancelled = post_from_team(&admin, &format!("/team/invitations/{id}/cancel")).await;
    assert_eq!(cancelled.header("location"), Some("/team?done=cancelled"));
    let team = english(&admin, "/team?done=cancelled").await;
    assert_eq!(team.texts("[data-notice]"), [a.invitation_cancelled]);
    assert!(team.attr("[data-invitation]", "data-invitation").is_none(), "{}", team.body);
    assert_eq!(team.texts("[data-no-invitations]").len(), 1);
    assert_ne!(app.browser().get(second_link).await.status, 200, "a cancelled invitation's link still works");
    app.stop().await;
}

async fn a_disabled_member_is_enabled_again_after_a_confirmation(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin(ADMIN).await;
    let admin = app.sign_in(ADMIN, PASSWORD).await;
    app.create_sender_with_password("sender@example.test", "Sender", PASSWORD).await;
    let team = admin.get("/team").await;
    let id = team.attr("[data-member][data-disabled=false] [data-disable]", "href").unwrap();
    let id: i64 = id.trim_start_matches("/team/").trim_end_matches("/disable").parse().unwrap();
    post_from_team(&admin, &format!("/team/{id}/disable")).await;
    assert_eq!(app.browser().sign_in("sender@example.test", PASSWORD).await.status, 200, "a disabled member signed in");

    let team = admin.get("/team").await;
    assert_eq!(team.attr(&format!("[data-member='{id}'] [data-enable]"), "href"), Some(format!("/team/{id}/enable")));
    let confirm = english(&admin, &format!("/team/{id}/enable")).await;
    assert_eq!(confirm.status, 200);
    assert_eq!(confirm.texts("h1"), [Lang::En.text().admin.enable_confirm_title]);
    let enabled = admin.post_form(&format!("/team/{id}/enable"), &[("csrf_token", &confirm.csrf_token())]).await;
    assert_eq!(enabled.header("location"), Some("/team?done=enabled"));

    assert_eq!(app.browser().sign_in("sender@example.test", PASSWORD).await.status, 303, "the member cannot sign in");
    let team = english(&admin, "/team?done=enabled").await;
    assert_eq!(team.texts("[data-notice]"), [Lang::En.text().admin.enabled_notice]);
    assert!(team.attr(&format!("[data-member='{id}'] [data-enable]"), "href").is_none(), "{}", team.body);
    assert_eq!(english(&admin, &format!("/team/{id}/enable")).await.status, 303, "an active member has no enable page");
    app.stop().await;
}

both_backends!(a_waiting_invitation_is_named_listed_sent_again_and_cancelled);
both_backends!(a_disabled_member_is_enabled_again_after_a_confirmation);
