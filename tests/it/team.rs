//! The team: invitations that work once for 72 hours, the admin-only page, disabling a sender.

use std::time::Duration;

use crate::support::PASSWORD;
use crate::support::clock;
use crate::{
    both_backends,
    support::{Backend, TestApp, count, execute},
};
use watasu::{db::Sql, sql};

async fn an_invitation_link_makes_an_account_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let link = app.invite(&admin, "new@example.test").await;

    let invited = app.browser();
    let form = invited.get(&link).await;
    assert_eq!(form.status, 200);
    assert_eq!(form.attr("#email", "value").as_deref(), Some("new@example.test"));
    let joined = invited
        .post_form(
            &link,
            &[
                ("csrf_token", &form.csrf_token()),
                ("name", "New Nakamura"),
                ("password", "violet harbor quietly ninety"),
            ],
        )
        .await;
    assert_eq!(joined.status, 303, "{}", joined.body);
    assert_eq!(invited.get("/shares").await.status, 200, "the new sender is not signed in");

    let again = app.browser();
    assert_eq!(again.get(&link).await.status, 404, "the invitation works twice");
    app.sign_in("new@example.test", "violet harbor quietly ninety").await;
}

async fn an_invitation_expires_after_72_hours(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let link = app.invite(&admin, "late@example.test").await;
    let valid_for_72_hours = execute(
        app.db(),
        sql!(
            "UPDATE invitations SET email = email WHERE id = $1 AND expires_at BETWEEN "
            now " + " secs("71.9 * 3600") " AND " now " + " secs("72 * 3600")
        ),
        1,
    )
    .await;
    assert_eq!(valid_for_72_hours, 1, "the invitation is not valid for 72 hours");
    app.set_ago("invitations", &["expires_at"], 1, &clock::id(1)).await;
    assert_eq!(app.browser().get(&link).await.status, 404);
}

async fn an_invitation_accepted_under_the_second_factor_policy_leads_to_set_up_not_a_session(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    let fields = [("csrf_token", team.csrf_token()), ("require_second_factor", "1".to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(admin.post_form("/team/sign-in-policy", &fields).await.header("location"), Some("/team?done=policy"));
    let link = app.invite(&admin, "new@example.test").await;

    let invited = app.browser();
    let form = invited.get(&link).await;
    let joined = invited
        .post_form(
            &link,
            &[
                ("csrf_token", &form.csrf_token()),
                ("name", "New Nakamura"),
                ("password", "violet harbor quietly ninety"),
            ],
        )
        .await;

    assert_eq!(joined.header("location"), Some("/login/enrol"), "{}", joined.body);
    assert_ne!(invited.get("/shares").await.status, 200, "the new member got a session with no factor");
    let enrol = invited.get("/login/enrol").await;
    assert_eq!(enrol.status, 200, "{}", enrol.body);
    assert_eq!(enrol.texts("[data-totp-secret]").len(), 1);
    assert_eq!(count(app.db(), "SELECT count(*) FROM users WHERE id > $1", 0).await, 2);
}

async fn admins_disabling_each_other_at_once_always_leave_an_active_admin(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let emails = ["one@example.test", "two@example.test", "three@example.test"];
    let mut ids = Vec::new();
    for email in emails {
        ids.push(app.create_admin(email).await);
    }
    for round in 1..=8 {
        execute(app.db(), Sql::same("UPDATE users SET disabled_at = NULL WHERE id > $1"), 0).await;
        let mut admins = Vec::new();
        for email in emails {
            let browser = app.sign_in(email, PASSWORD).await;
            let csrf = browser.get("/team").await.csrf_token();
            admins.push((browser, csrf));
        }

        let disables = admins.iter().enumerate().flat_map(|(me, (browser, csrf))| {
            ids.iter().enumerate().filter(move |(other, _)| *other != me).map(move |(_, id)| async move {
                browser.post_form(&format!("/team/{id}/disable"), &[("csrf_token", csrf)]).await
            })
        });
        futures_util::future::join_all(disables).await;

        let active =
            count(app.db(), "SELECT count(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL AND id > $1", 0)
                .await;
        assert!(active >= 1, "round {round}: no active admin is left");
    }
}

async fn two_admins_disabling_each_other_in_the_same_instant_leave_one_active(backend: Backend) {
    // The same race without the pages around it, so the two statements really overlap.
    let app = TestApp::spawn(backend).await;
    let (one, two) = (app.create_admin("one@example.test").await, app.create_admin("two@example.test").await);
    let users = watasu::accounts::Users::new(app.db().clone());
    for round in 1..=200 {
        let enable_both = "UPDATE users SET disabled_at = NULL WHERE id > $1";
        execute(app.db(), Sql::same(enable_both), 0).await;

        let (first, second) = tokio::join!(users.disable(two, one), users.disable(one, two));

        assert!(!(first.unwrap() && second.unwrap()), "round {round}: both admins were disabled");
    }
}

async fn the_team_page_is_for_admins_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    assert_eq!(sender.get("/team").await.status, 404);
    let page = sender.get("/account").await;
    let invite =
        sender.post_form("/team/invite", &[("csrf_token", &page.csrf_token()), ("email", "x@example.test")]).await;
    assert_eq!(invite.status, 404);
    assert_eq!(crate::support::count(app.db(), "SELECT count(*) FROM invitations WHERE id > $1", 0).await, 0);
}

async fn a_disabled_sender_is_signed_out_at_once_and_cannot_sign_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let sender_id = app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    let answer = admin.post_form(&format!("/team/{sender_id}/disable"), &[("csrf_token", &team.csrf_token())]).await;
    assert_eq!(answer.status, 303);
    assert_eq!(sender.get("/shares").await.header("location"), Some("/login"), "still signed in");
    let retry = app.browser();
    let form = retry.get("/login").await;
    let refused = retry
        .post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", "s@example.test"), ("password", PASSWORD)])
        .await;
    assert_eq!(refused.status, 200, "a disabled sender signed in");
    assert_eq!(
        admin.get("/team").await.attr(&format!("[data-member='{sender_id}']"), "data-disabled").as_deref(),
        Some("true")
    );
}

async fn inviting_an_existing_account_is_refused_clearly(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    let page =
        admin.post_form("/team/invite", &[("csrf_token", &team.csrf_token()), ("email", "ADMIN@example.test")]).await;
    assert_eq!(page.status, 400);
    assert_eq!(page.texts("[role=alert]").len(), 1);
}

both_backends!(
    an_invitation_link_makes_an_account_once,
    an_invitation_expires_after_72_hours,
    an_invitation_accepted_under_the_second_factor_policy_leads_to_set_up_not_a_session,
    admins_disabling_each_other_at_once_always_leave_an_active_admin,
    two_admins_disabling_each_other_in_the_same_instant_leave_one_active,
    the_team_page_is_for_admins_only,
    a_disabled_sender_is_signed_out_at_once_and_cannot_sign_in,
    inviting_an_existing_account_is_refused_clearly
);

async fn without_smtp_an_admin_reads_the_mails_on_the_dev_outbox_page(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.smtp_url = None).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    admin.post_form("/team/invite", &[("csrf_token", &team.csrf_token()), ("email", "new@example.test")]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = admin.get("/dev/outbox").await;
        if page.body.contains("/invite/") || std::time::Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(page.status, 200);
    assert_eq!(page.texts(".dev-mail h2"), ["watasu への招待"]);
    assert!(page.texts(".dev-mail pre")[0].contains("/invite/"), "{}", page.body);

    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    assert_eq!(sender.get("/dev/outbox").await.status, 404, "a sender reads everyone's mail");
}

async fn the_dev_outbox_shows_a_long_japanese_subject_exactly_and_says_to_in_japanese(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.smtp_url = None).await;
    let share = app.create_share().await;
    let sender = watasu::accounts::User {
        id: share.sender_id,
        email: "sato@example.test".to_owned(),
        display_name: "経理部 第二課 請求書担当の佐藤花子".to_owned(),
        role: watasu::accounts::Role::Sender,
        lang: watasu::i18n::Lang::Ja,
        disabled: false,
    };
    let link = app.state.config.url_for(&format!("/s/{}", share.token));
    let mails = &app.state.services.mails;
    mails
        .notify_recipient(share.id, &sender, &link, watasu::i18n::Lang::Ja, watasu::services::mails::Delivery::Now)
        .await;
    // The outbox worker may have claimed the mail first and write it a moment later.
    let folder = app.state.config.settings.data_dir.join("dev-mail");
    let first_mail = || std::fs::read_dir(&folder).ok()?.flatten().next();
    crate::support::eventually(Duration::from_secs(10), "the mail in the outbox folder", async || {
        first_mail().is_some()
    })
    .await;
    // Long enough that lettre folds it into several encoded words.
    let eml = first_mail().unwrap();
    let raw = std::fs::read_to_string(eml.path()).unwrap();
    assert!(raw.lines().filter(|l| l.contains("=?utf-8?b?")).count() >= 2, "{raw}");

    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let page = admin.get("/dev/outbox").await;
    assert_eq!(page.texts(".dev-mail h2"), ["経理部 第二課 請求書担当の佐藤花子 さんからファイルが届いています"]);
    assert_eq!(page.texts(".dev-mail p.muted"), ["宛先: recipient@example.test"]);
    assert!(page.texts(".dev-mail pre")[0].contains("(sato@example.test) さんから"), "{}", page.body);
}

async fn with_smtp_configured_the_dev_outbox_page_does_not_exist(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    assert_eq!(admin.get("/dev/outbox").await.status, 404);
}

both_backends!(
    without_smtp_an_admin_reads_the_mails_on_the_dev_outbox_page,
    the_dev_outbox_shows_a_long_japanese_subject_exactly_and_says_to_in_japanese,
    with_smtp_configured_the_dev_outbox_page_does_not_exist
);
