//! The new-share form for several files and several people, without JavaScript: the files in one
//! multipart body become one handover with distinct names and a share (a link, a mail) per
//! address; a bad address among several is named and everything typed comes back; the files over
//! the limit together are refused with nothing kept; and a sender ends a whole handover (their
//! own only).

use std::time::Duration;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, count, texts},
};

/// Posts the new-share form as a browser without JavaScript would: `recipients` in the one
/// address field, then every file of `files` in the multipart body (the last fields).
async fn post(browser: &Browser, recipients: &str, files: &[(&str, &[u8])]) -> Page {
    post_with(browser, &[("recipient", recipients), ("name_file", "1")], files).await
}

/// The same with `fields` (the address field among them) instead of the usual ones.
pub(crate) async fn post_with(browser: &Browser, fields: &[(&str, &str)], files: &[(&str, &[u8])]) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf)
        .text("expires_in", "1d")
        .text("message", "The contract and its appendices")
        .text("mail_lang", "en")
        .text("notify", "1");
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    for (name, content) in files {
        form = form.part("file", reqwest::multipart::Part::bytes(content.to_vec()).file_name(name.to_string()));
    }
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.header("Accept-Language", "en").multipart(form).send().await.unwrap()).await
}

fn stored_files(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.path().join("files")).map_or(0, |dir| dir.count())
}

/// What the sender's account holds: handovers, shares, and uploads (an upload made a share of is gone).
async fn held(app: &TestApp) -> [i64; 3] {
    [
        count(app.db(), "SELECT count(*) FROM handovers WHERE id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await,
    ]
}

async fn three_files_to_two_addresses_make_one_handover_with_a_link_and_a_mail_per_recipient(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let files: [(&str, &[u8]); 3] = [("a.pdf", b"first"), ("a.pdf", b"second"), ("notes.txt", b"third")];

    let answer = post(&browser, "one@example.test, two@example.test", &files).await;
    let created = answer.follow_created(&browser.client, &browser.base).await;

    assert_eq!(created.status, 200, "{}", created.body);
    let links = created.attrs("[data-created-link] input", "value");
    assert_eq!(links.len(), 2, "{}", created.body);
    assert_eq!(created.texts("[data-created-recipient]"), ["one@example.test", "two@example.test"]);
    assert_eq!(created.texts("[data-created-file]").len(), 3);
    assert_ne!(links[0], links[1]);
    let handover = count(app.db(), "SELECT min(handover_id) FROM shares WHERE id > $1", 0).await;
    let names =
        texts(app.db(), "SELECT original_name FROM files WHERE handover_id = $1 ORDER BY position", handover).await;
    assert_eq!(names, ["a.pdf", "a (2).pdf", "notes.txt"]);
    assert_eq!(held(&app).await, [1, 2, 0]);
    assert_eq!(stored_files(&app), 3, "each file is stored once for both recipients");

    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    for (recipient, link) in ["one@example.test", "two@example.test"].into_iter().zip(&links) {
        let mail = mails.iter().find(|mail| mail.to == [recipient]).expect("a mail per recipient");
        let text = mail.text();
        assert!(text.contains(link.as_str()), "{recipient}'s mail lacks their link: {text}");
        assert!(!links.iter().any(|other| other != link && text.contains(other.as_str())), "another's link: {text}");
        for name in ["a.pdf (5 bytes)", "a (2).pdf (6 bytes)", "notes.txt (5 bytes)"] {
            assert!(text.contains(name), "{name} is not named: {text}");
        }
    }
    let list = browser.get_with("/shares", &[("Accept-Language", "en")]).await;
    assert_eq!(list.texts("[data-more-files]"), ["+ 2 more files", "+ 2 more files"]);
    app.stop().await;
}

async fn a_bad_address_among_several_is_named_and_everything_typed_comes_back(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let typed = "one@example.test, not-an-address, two@example.test";

    let page = post(&browser, typed, &[("a.pdf", b"first"), ("b.pdf", b"second")]).await;

    assert_eq!(page.status, 400, "{}", page.body);
    let said = page.texts("#recipient-error").concat();
    assert!(said.contains("“not-an-address”"), "the bad address is not named: {said}");
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some(typed));
    assert_eq!(page.attr("#recipient", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(page.texts("#message"), ["The contract and its appendices"]);
    assert_eq!(page.attr("#mail_lang option[selected]", "value").as_deref(), Some("en"));
    assert_eq!(held(&app).await, [0, 0, 0]);
    assert_eq!(stored_files(&app), 0, "a file was stored before the fields were checked");
    app.stop().await;
}

async fn files_over_the_limit_together_are_refused_with_nothing_kept(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = 100 * 1024).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let part = vec![7u8; 40 * 1024];
    let files: [(&str, &[u8]); 3] = [("a.bin", &part), ("b.bin", &part), ("c.bin", &part)];

    let page = post(&browser, "one@example.test, two@example.test", &files).await;

    assert_eq!(page.status, 413, "{}", page.body);
    let said = page.texts("#file-error").concat();
    assert!(said.contains("limit of 102 KB"), "the limit is not said: {said}");
    assert_eq!(page.attr("#recipient", "value").as_deref(), Some("one@example.test, two@example.test"));
    assert!(page.texts("[data-kept-upload]").is_empty(), "a refused file is offered again");
    assert_eq!(held(&app).await, [0, 0, 0]);
    assert_eq!(stored_files(&app), 0, "a refused file was kept");
    app.stop().await;
}

async fn the_limits_are_stated_on_the_form_before_anything_is_sent(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.max_upload_bytes = 100 * 1024).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let form = browser.get_with("/shares/new", &[("Accept-Language", "en")]).await;

    assert_eq!(form.texts("#file-hint"), ["Up to 100 files, 102 KB in all."]);
    assert!(form.texts("#recipient-hint").concat().contains("commas (up to 20)"), "{}", form.body);
    assert_eq!(form.attr("#file", "multiple").as_deref(), Some(""));
    assert_eq!(form.attr("#recipient", "multiple").as_deref(), Some(""));
    app.stop().await;
}

async fn ending_the_whole_handover_ends_every_recipient_s_share_and_only_its_sender_may(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password("owner@example.test", "Sender Sato", PASSWORD).await;
    let owner = app.sign_in("owner@example.test", PASSWORD).await;
    let other = app.signed_in_sender("other@example.test").await;
    let shares = app
        .fake_share()
        .sender(sender)
        .file("a.pdf", b"first")
        .file("b.pdf", b"second")
        .recipient("one@example.test")
        .recipient("two@example.test")
        .create_all()
        .await;
    let path = format!("/shares/{}", shares[0].id);
    let status = async |id: i64| {
        count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND revoked_at IS NOT NULL", id).await
    };

    let page = owner.get_with(&path, &[("Accept-Language", "en")]).await;
    assert_eq!(page.texts("[data-handover-files] li").len(), 2);
    assert_eq!(page.texts("[data-other-recipients] a"), ["two@example.test"]);
    let stranger = other
        .post_form(&format!("{path}/end-handover"), &[("csrf_token", &other.get("/shares/new").await.csrf_token())])
        .await;
    assert_eq!(stranger.status, 404, "another sender ended someone's handover");
    assert_eq!((status(shares[0].id).await, status(shares[1].id).await), (0, 0));

    let forged = owner.post_form(&format!("{path}/end-handover"), &[]).await;
    assert_eq!(forged.status, 403, "ended without the form's token");
    assert_eq!((status(shares[0].id).await, status(shares[1].id).await), (0, 0));
    let csrf = page.attr("[data-end-handover] input[name=csrf_token]", "value").expect("the form's token");
    let ended = owner.post_form(&format!("{path}/end-handover"), &[("csrf_token", &csrf)]).await;

    assert_eq!(ended.status, 303, "{}", ended.body);
    assert_eq!((status(shares[0].id).await, status(shares[1].id).await), (1, 1));
    let after = ended.follow(&owner, &[("Accept-Language", "en")]).await;
    assert!(after.body.contains(Lang::En.text().dashboard.handover.handover_ended), "{}", after.body);
    assert!(after.texts("[data-end-handover]").is_empty(), "an ended handover still offers to end it");

    // An admin may end any sender's handover.
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let more = app.fake_share().sender(sender).recipient("three@example.test").recipient("four@example.test");
    let more = more.file("c.pdf", b"third").create_all().await;
    let csrf = admin.get("/shares/new").await.csrf_token();
    let ended = admin.post_form(&format!("/shares/{}/end-handover", more[1].id), &[("csrf_token", &csrf)]).await;
    assert_eq!(ended.status, 303, "{}", ended.body);
    assert_eq!((status(more[0].id).await, status(more[1].id).await), (1, 1));
    app.stop().await;
}

async fn the_mail_lists_ten_names_then_how_many_more_or_only_the_count_when_names_are_off(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let names: Vec<String> = (1..=12).map(|i| format!("part-{i:02}.pdf")).collect();
    let twelve: Vec<(&str, &[u8])> = names.iter().map(|name| (name.as_str(), &b"12345"[..])).collect();

    let named = post(&browser, "one@example.test", &twelve).await;
    let named_mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.remove(0);
    let unnamed = post_with(&browser, &[("recipient", "two@example.test")], &twelve[..3]).await;
    let unnamed_mail = app.smtp.wait_for(2, Duration::from_secs(10)).await.remove(1);

    assert_eq!((named.status.as_u16(), unnamed.status.as_u16()), (303, 303), "{}{}", named.body, unnamed.body);
    let text = named_mail.text();
    for name in &names[..10] {
        assert!(text.contains(&format!("- {name} (5 bytes)")), "{name} is not listed: {text}");
    }
    assert!(!text.contains("part-11.pdf") && !text.contains("part-12.pdf"), "more than ten listed: {text}");
    assert!(text.contains("and 2 more"), "{text}");
    let text = unnamed_mail.text();
    assert!(text.contains("3 files") && !text.contains("part-0"), "{text}");
    assert!(!unnamed_mail.data.contains("part-0"), "a name is in the mail's HTML");
    app.stop().await;
}

async fn every_likely_typo_among_several_addresses_is_asked_about_once_with_the_files_kept(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let typed = "tanaka@example, one@example.test, suzuki@exampletest";
    let files: [(&str, &[u8]); 2] = [("a.pdf", b"first"), ("b.pdf", b"second")];

    let asked = post(&browser, typed, &files).await;

    assert_eq!(asked.status, 200, "{}", asked.body);
    assert_eq!(asked.texts("[data-address-check] strong"), ["tanaka@example", "suzuki@exampletest"]);
    let confirmed = asked.attr("input[name=recipient_confirmed]", "value").unwrap();
    assert_eq!(asked.attrs("input[name=upload]", "value").len(), 2, "the files are not kept");
    assert_eq!(held(&app).await, [0, 0, 2]);

    let mut fields = vec![("recipient", typed), ("recipient_confirmed", confirmed.as_str()), ("name_file", "1")];
    let kept = asked.attrs("input[name=upload]", "value");
    fields.extend(kept.iter().map(|id| ("upload", id.as_str())));
    let made = post_with(&browser, &fields, &[]).await;

    assert_eq!(made.status, 303, "{}", made.body);
    assert_eq!(held(&app).await, [1, 3, 0]);
    app.stop().await;
}

both_backends!(
    the_mail_lists_ten_names_then_how_many_more_or_only_the_count_when_names_are_off,
    every_likely_typo_among_several_addresses_is_asked_about_once_with_the_files_kept,
    three_files_to_two_addresses_make_one_handover_with_a_link_and_a_mail_per_recipient,
    a_bad_address_among_several_is_named_and_everything_typed_comes_back,
    files_over_the_limit_together_are_refused_with_nothing_kept,
    the_limits_are_stated_on_the_form_before_anything_is_sent,
    ending_the_whole_handover_ends_every_recipient_s_share_and_only_its_sender_may,
);
