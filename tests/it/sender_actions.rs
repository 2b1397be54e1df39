//! A sender's changes and their results: ending a share, disabling or deleting a member each ask
//! first on a page of their own (plain GET, no JavaScript needed) and report what they did; an
//! invitation and an upload lead to result pages whose reload repeats nothing.

use std::time::Duration;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, count},
};

async fn english(browser: &Browser, path: &str) -> Page {
    browser.get_with(path, &[("Accept-Language", "en")]).await
}

/// Posts the new-share form without JavaScript, in English, with the given fields.
async fn post_new_share(browser: &Browser, fields: &[(&str, &str)], file: Option<(&str, &[u8])>) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new().text("csrf_token", csrf);
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    if let Some((name, content)) = file {
        form = form.part("file", reqwest::multipart::Part::bytes(content.to_vec()).file_name(name.to_owned()));
    }
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.header("Accept-Language", "en").multipart(form).send().await.unwrap()).await
}

async fn ending_a_share_asks_first_on_its_own_page_and_then_says_it_ended(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("owner@example.test", "Sender Sato", PASSWORD).await;
    let browser = app.sign_in("owner@example.test", PASSWORD).await;
    let share =
        app.fake_share().sender(sender).recipient("client@example.test").file("plan.pdf", b"plan").create().await;
    let s = &Lang::En.text().dashboard;

    let page = english(&browser, &format!("/shares/{}", share.id)).await;
    let href = page.attr("a[data-revoke]", "href").expect("a link to the confirmation");
    assert_eq!(page.attr("a[data-revoke]", "class").as_deref(), Some("button button-danger"));
    let confirm = english(&browser, &href).await;
    assert_eq!(confirm.status, 200);
    assert_eq!(confirm.texts("h1"), [s.revoke_confirm_title]);
    assert_eq!(confirm.attr("main form button.button-danger", "type").as_deref(), Some("submit"));
    assert_eq!(confirm.attr("main form", "method").as_deref(), Some("post"));
    assert_eq!(app.browser().get(&format!("/s/{}", share.token)).await.status, 200, "a GET ended the share");

    let ended = browser.post_form(&href, &[("csrf_token", &confirm.csrf_token())]).await;
    assert_eq!(ended.header("location"), Some(format!("/shares/{}?done=revoked", share.id).as_str()));
    let after = english(&browser, ended.header("location").unwrap()).await;
    assert_eq!(after.texts("[data-notice]"), [s.revoked_notice]);
    assert_eq!(after.attr("#share-status [data-status]", "data-status").as_deref(), Some("revoked"));
    assert_eq!(app.browser().get(&format!("/s/{}", share.token)).await.status, 404);

    // Asked again (a second tab): nothing left to end, and the page says so.
    let again = english(&browser, &href).await;
    assert_eq!(again.header("location"), Some(format!("/shares/{}?done=unchanged", share.id).as_str()));
    let other = app.signed_in_sender("other@example.test").await;
    assert_eq!(other.get(&href).await.status, 404, "someone else's share can be asked about");
}

async fn disabling_and_deleting_a_member_ask_first_and_the_team_page_reports_the_result(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let member = app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let s = &Lang::En.text().admin;

    let team = english(&admin, "/team").await;
    let disable = team.attr(&format!("[data-member='{member}'] a[data-disable]"), "href").expect("a disable link");
    let delete = team.attr(&format!("[data-member='{member}'] a[data-delete]"), "href").expect("a delete link");
    let confirm = english(&admin, &disable).await;
    assert_eq!(confirm.texts("h1"), [s.disable_confirm_title]);
    assert!(confirm.attr("main form button.button-danger", "type").is_some());
    assert_eq!(
        english(&admin, "/team").await.attr(&format!("[data-member='{member}']"), "data-disabled").as_deref(),
        Some("false")
    );
    let asked = english(&admin, &delete).await;
    assert_eq!(asked.texts("h1"), [s.delete_confirm_title]);
    assert_eq!(asked.attr("main form", "action").as_deref(), Some(delete.as_str()));
    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE id > $1", 0).await, 0, "a GET opened a case");

    let done = admin.post_form(&disable, &[("csrf_token", &confirm.csrf_token())]).await;
    assert_eq!(done.header("location"), Some("/team?done=disabled"));
    let after = english(&admin, "/team?done=disabled").await;
    assert_eq!(after.texts("[data-notice]"), [s.disabled_notice]);
    assert_eq!(after.attr(&format!("[data-member='{member}']"), "data-disabled").as_deref(), Some("true"));
    assert_eq!(english(&admin, &disable).await.header("location"), Some("/team"), "a disabled member asked again");
}

async fn an_invitation_leads_to_the_team_page_whose_reload_sends_nothing_again(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    app.invite(&admin, "new@example.test").await;
    for _ in 0..2 {
        let result = english(&admin, "/team?done=invited").await;
        assert_eq!(result.texts("[data-notice]"), [Lang::En.text().admin.team_invited]);
    }
    assert_eq!(count(app.db(), "SELECT count(*) FROM invitations WHERE id > $1", 0).await, 1);
    assert_eq!(app.smtp.messages().len(), 1, "a reload sent the invitation again");
}

async fn an_upload_leads_to_its_own_created_page_for_its_sender_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let browser = app.sign_in("s@example.test", PASSWORD).await;
    let fields = [("recipient", "client@example.test"), ("expires_in", "7d"), ("message", ""), ("mail_lang", "en")];
    let answer = post_new_share(&browser, &fields, Some(("plan.pdf", b"plan"))).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let location = answer.header("location").unwrap().to_owned();
    let s = &Lang::En.text().dashboard;

    for _ in 0..2 {
        let created = english(&browser, &location).await;
        assert_eq!(created.status, 200);
        assert!(created.texts("[data-created-file]")[0].starts_with("plan.pdf"));
        assert_eq!(created.texts("[data-created-recipient]"), ["client@example.test"]);
        assert_eq!(created.texts("[data-created-expires]").len(), 1);
        assert!(created.attr("#share-link", "value").unwrap().contains("/s/"));
    }
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await,
        1,
        "a reload made a second share"
    );

    // The same sender elsewhere sees the page without the link; nobody else sees it at all.
    let elsewhere = app.sign_in("s@example.test", PASSWORD).await;
    let there = english(&elsewhere, &location).await;
    assert_eq!(there.status, 200);
    assert!(there.attr("#share-link", "value").is_none());
    assert_eq!(there.texts("[data-link-gone]"), [s.created_link_gone]);
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    assert_eq!(admin.get(&location).await.status, 404);
    assert_eq!(app.signed_in_sender("other@example.test").await.get(&location).await.status, 404);
}

async fn a_refused_form_keeps_its_values_ties_the_error_to_its_field_and_asks_for_the_file_again(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    // No notify field: the box was unticked.
    let fields =
        [("recipient", "not an address"), ("expires_in", "1h"), ("message", "Hello there"), ("mail_lang", "en")];
    let page = post_new_share(&browser, &fields, Some(("plan.pdf", b"plan"))).await;
    assert_eq!(page.status, 400);
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some("not an address"));
    assert_eq!(page.texts("#message"), ["Hello there"]);
    assert_eq!(page.attr("#expires_in option[selected]", "value").as_deref(), Some("1h"));
    assert_eq!(page.attr("#mail_lang option[selected]", "value").as_deref(), Some("en"));
    assert!(page.attr("input[name=notify]", "checked").is_none(), "the unticked box came back ticked");
    assert_eq!(page.attr("#recipient", "aria-invalid").as_deref(), Some("true"));
    let described = page.attr("#recipient", "aria-describedby").unwrap();
    assert!(described.split(' ').any(|id| id == "recipient-error"), "{described}");
    let named = Lang::En.text().dashboard.handover.recipient_invalid.replace("{address}", "not an address");
    assert_eq!(page.texts("#recipient-error"), [named]);
    assert_eq!(page.texts("[role=alert]").len(), 1);
    assert_eq!(page.texts("[data-file-again]"), [Lang::En.text().dashboard.file_choose_again]);
    assert!(page.attr("#file", "aria-describedby").unwrap().contains("file-again"));
    assert!(page.attr("#message", "aria-invalid").is_none());

    let missing = post_new_share(&browser, &[("recipient", "client@example.test"), ("notify", "1")], None).await;
    assert_eq!(missing.attr("#file", "aria-invalid").as_deref(), Some("true"));
    assert!(missing.attr("#file", "aria-describedby").unwrap().split(' ').any(|id| id == "file-error"));
    assert!(missing.attr("input[name=notify]", "checked").is_some());
}

async fn the_form_starts_at_the_configured_validity_and_states_the_limit_in_decimal_units(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| {
        s.share_ttl = Duration::from_secs(3 * 86_400);
        s.max_upload_bytes = 2 << 30;
    })
    .await;
    let browser = app.signed_in_sender("s@example.test").await;
    let page = english(&browser, "/shares/new").await;
    assert_eq!(page.attr("#expires_in option[selected]", "value").as_deref(), Some("3d"));
    assert_eq!(page.texts("#expires_in option[selected]"), ["3 days"]);
    let values: Vec<String> = page
        .html()
        .select(&scraper::Selector::parse("#expires_in option").unwrap())
        .map(|o| o.value().attr("value").unwrap().to_owned())
        .collect();
    assert_eq!(values, ["1h", "1d", "3d", "7d", "30d"]);
    assert_eq!(page.texts("#file-hint"), ["Up to 100 files, 2.1 GB in all."]);
    assert_eq!(page.attr("#file", "data-max-bytes").as_deref(), Some("2147483648"));
    let ja = browser.get_with("/shares/new", &[("Accept-Language", "ja")]).await;
    assert!(ja.texts("#file-hint")[0].contains("2.1 GB"));
}

both_backends!(
    ending_a_share_asks_first_on_its_own_page_and_then_says_it_ended,
    disabling_and_deleting_a_member_ask_first_and_the_team_page_reports_the_result,
    an_invitation_leads_to_the_team_page_whose_reload_sends_nothing_again,
    an_upload_leads_to_its_own_created_page_for_its_sender_only,
    a_refused_form_keeps_its_values_ties_the_error_to_its_field_and_asks_for_the_file_again,
    the_form_starts_at_the_configured_validity_and_states_the_limit_in_decimal_units
);
