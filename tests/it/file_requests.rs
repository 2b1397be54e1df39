//! File requests: a sender asks an uploader for files. The uploader proves the mailbox exactly as
//! a recipient does, uploads within the request's limits, may take a file back, and finishes once;
//! the link then answers "already answered" to everyone. Only the requesting sender fetches what
//! arrived, and the GC removes it when the retention ends.

use std::time::Duration;

use watasu::{
    request::RequestLimits,
    services::{mails::Delivery, requests::FileRequest},
    share::{Message, ShareTtl},
};

use crate::{
    both_backends,
    cli_output::env_of,
    lifecycle::quiet_app,
    support::{
        Backend, Browser, Page, TestApp,
        clock::{DAY, HOUR},
        count,
        process::run_watasu_fed,
        recipient::{event_kinds, without_csrf_and_typed},
    },
};

use crate::support::PASSWORD;

pub(crate) const SENDER: &str = "sender@example.test";
pub(crate) const UPLOADER: &str = "uploader@example.test";

/// A request made through the service, as the dashboard and the CLI make it.
pub(crate) struct TestRequest {
    pub(crate) id: i64,
    pub(crate) token: String,
}

pub(crate) async fn make_request(app: &TestApp, limits: RequestLimits) -> TestRequest {
    if count(app.db(), "SELECT count(*) FROM users WHERE id >= $1", 0).await == 0 {
        app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    }
    let sender = watasu::accounts::EmailAddress::parse(SENDER).unwrap();
    let sender = app.state.services.accounts.active_by_email(&sender).await.unwrap().unwrap();
    let request = FileRequest {
        uploader: watasu::accounts::EmailAddress::parse(UPLOADER).unwrap(),
        message: Message::parse("Please send the signed contract.").unwrap(),
        ttl: ShareTtl::parse(Duration::from_secs(DAY as u64), Duration::from_secs(30 * DAY as u64)).unwrap(),
        limits,
        lang: watasu::i18n::Lang::En,
    };
    let created = app.state.services.requests.create(&sender, request, Delivery::Background).await.unwrap();
    let token = created.link.rsplit("/s/").next().unwrap().to_owned();
    TestRequest { id: created.share_id, token }
}

/// The request's words as a browser without a language preference reads them.
fn words() -> &'static watasu::i18n::RequestText {
    &watasu::i18n::Lang::Ja.text().request
}

pub(crate) fn roomy() -> RequestLimits {
    RequestLimits { max_files: 5, max_file_bytes: 1000, max_total_bytes: 2000 }
}

/// Walks `browser` through the email and code steps as `address`; answers the upload step.
pub(crate) async fn verify_uploader(app: &TestApp, browser: &Browser, token: &str) -> Page {
    let before = app.smtp.messages().len();
    let code_step = browser.ask_for_code(token, UPLOADER).await;
    assert_eq!(code_step.attr("#step", "data-step").as_deref(), Some("code"), "{}", code_step.body);
    let code = app.smtp.code_for_after(UPLOADER, before).await;
    let answer = browser.submit_code(token, &code_step.csrf_token(), &code).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let page = browser.open_link(token).await;
    assert_eq!(page.attr("#step", "data-step").as_deref(), Some("upload"), "{}", page.body);
    page
}

/// Posts the upload form with `files` (name, bytes), the CSRF token first, as a browser does.
pub(crate) async fn upload(browser: &Browser, token: &str, csrf: &str, files: &[(&str, &[u8])]) -> Page {
    let mut form = reqwest::multipart::Form::new().text("csrf_token", csrf.to_owned());
    for (name, bytes) in files {
        form = form.part("file", reqwest::multipart::Part::bytes(bytes.to_vec()).file_name(name.to_string()));
    }
    let request =
        browser.client.post(browser.url(&format!("/s/{token}/upload"))).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.multipart(form).send().await.unwrap()).await
}

pub(crate) async fn arrived_rows(app: &TestApp, request: &TestRequest) -> i64 {
    count(
        app.db(),
        "SELECT count(*) FROM files f JOIN shares s ON s.handover_id = f.handover_id WHERE s.id = $1",
        request.id,
    )
    .await
}

pub(crate) fn stored_files(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.path().join("files")).map_or(0, |dir| {
        dir.filter_map(Result::ok).filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count()
    })
}

async fn a_request_made_on_the_command_line_mails_the_uploader_and_lists_as_open(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender(SENDER, "Sender Sato").await;
    let mut env = env_of(&app);
    env.push(("WATASU_SMTP_URL", app.smtp.url()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["request", "create", "--from", SENDER, "--to", UPLOADER, "--message", "Your ID scan, please"];
    let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu_fed(&args, &env, b""));
    assert_eq!(code, 0, "{stderr}");
    let link = stdout.lines().last().unwrap().to_owned();
    assert!(link.contains("/s/"), "{stdout}");

    let mail = app.smtp.messages().into_iter().find(|m| m.to == [UPLOADER]).expect("the uploader is mailed");
    assert!(mail.text().contains(&link), "{}", mail.text());
    assert!(mail.text().contains("Your ID scan, please"), "{}", mail.text());
    let landing = app.browser().navigate(&link[link.find("/s/").unwrap()..]).await;
    assert_eq!(landing.status, 200);
    assert_eq!(landing.texts("h1"), [words().asks_you.replace("{sender}", "Sender Sato")]);

    let (code, listed, stderr) =
        tokio::task::block_in_place(|| run_watasu_fed(&["request", "list", "--json"], &env, b""));
    assert_eq!(code, 0, "{stderr}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["state"], "open");
    assert_eq!(listed[0]["uploader_email"], UPLOADER);
    assert_eq!(listed[0]["files"].as_array().unwrap().len(), 0);
    let (_, shares, _) = tokio::task::block_in_place(|| run_watasu_fed(&["share", "list", "--json"], &env, b""));
    assert_eq!(serde_json::from_str::<Vec<serde_json::Value>>(&shares).unwrap().len(), 0, "a request is no delivery");

    // Limits beyond the instance's cap are refused with one clear line, and nothing is made.
    let args = ["request", "create", "--from", SENDER, "--to", UPLOADER, "--max-total-size", "1T"];
    let (code, _, stderr) = tokio::task::block_in_place(|| run_watasu_fed(&args, &env, b""));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("limit"), "{stderr}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM file_requests WHERE handover_id > $1", 0).await, 1);
}

async fn a_stranger_holding_the_link_sees_what_the_uploader_sees_and_uploads_nothing(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;

    let (stranger, right) = (app.browser(), app.browser());
    let wrong = stranger.ask_for_code(&request.token, "someone@example.test").await;
    let matched = right.ask_for_code(&request.token, UPLOADER).await;
    assert_eq!(wrong.status, matched.status);
    assert_eq!(without_csrf_and_typed(&wrong.body), without_csrf_and_typed(&matched.body), "no oracle");

    // Its session has no grant: an upload is refused before a byte is stored.
    let refused = upload(&stranger, &request.token, &wrong.csrf_token(), &[("a.txt", b"stranger")]).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // Nor can a browser without any session, or one posting without its token.
    let anonymous = upload(&app.browser(), &request.token, "", &[("a.txt", b"anonymous")]).await;
    assert!(matches!(anonymous.status.as_u16(), 400 | 403), "{}", anonymous.body);
    assert_eq!(arrived_rows(&app, &request).await, 0);
    assert_eq!(stored_files(&app), 0);
}

async fn the_verified_uploader_uploads_two_files_removes_one_and_finishes_once(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = app.browser();
    let page = verify_uploader(&app, &uploader, &request.token).await;
    assert!(page.body.contains("Please send the signed contract."), "the message shows after the code");

    let answer =
        upload(&uploader, &request.token, &page.csrf_token(), &[("scan.pdf", b"%PDF scan"), ("id.png", b"PNG id")])
            .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let page = uploader.open_link(&request.token).await;
    assert_eq!(page.texts(".arrived .file-name"), ["scan.pdf", "id.png"]);
    let digest = watasu::secret::sha256_hex("%PDF scan");
    assert_eq!(page.texts(".arrived .file-sha256")[0], digest);

    let removed = uploader
        .post_form(&format!("/s/{}/files/1/remove", request.token), &[("csrf_token", &page.csrf_token())])
        .await;
    assert_eq!(removed.status, 303, "{}", removed.body);
    assert_eq!(uploader.open_link(&request.token).await.texts(".arrived .file-name"), ["scan.pdf"]);
    assert_eq!(stored_files(&app), 1, "the removed file's bytes are gone");

    let before = app.smtp.messages().len();
    let fields = [("csrf_token", page.csrf_token()), ("note", "Signed on page 3.".to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let finished = uploader.post_form(&format!("/s/{}/finish", request.token), &fields).await;
    assert_eq!(finished.status, 303, "{}", finished.body);

    // The link now says "already answered" to everyone, the uploader included, and takes nothing.
    for browser in [&uploader, &app.browser()] {
        let page = browser.open_link(&request.token).await;
        assert_eq!(page.status, 410, "{}", page.body);
        assert_eq!(page.texts("h1"), [words().answered_title], "{}", page.body);
    }
    let again = uploader.post_form(&format!("/s/{}/finish", request.token), &fields).await;
    assert_eq!(again.status, 410);
    let late = upload(&uploader, &request.token, &page.csrf_token(), &[("late.txt", b"late")]).await;
    assert_eq!(late.status, 410, "{}", late.body);
    assert_eq!(arrived_rows(&app, &request).await, 1);

    // The sender hears of it: from the verified address, with each file's digest and the note.
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await;
    let mail = mails.iter().find(|m| m.to == [SENDER]).expect("the sender is mailed");
    assert_eq!(mail.subject(), format!("{UPLOADER}さんからファイルが届きました"), "the sender's language");
    let text = mail.text();
    assert!(text.contains("scan.pdf") && text.contains(&digest) && text.contains("Signed on page 3."), "{text}");
    assert!(!text.contains("id.png"), "{text}");
    let events = event_kinds(&app, request.id).await;
    assert!(
        events.contains(&"file_uploaded".to_owned()) && events.ends_with(&["request_answered".to_owned()]),
        "{events:?}"
    );
}

async fn an_upload_over_the_requests_limits_is_refused_and_keeps_nothing(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, RequestLimits { max_files: 2, max_file_bytes: 10, max_total_bytes: 15 }).await;
    let uploader = app.browser();
    let csrf = verify_uploader(&app, &uploader, &request.token).await.csrf_token();

    let too_large = upload(&uploader, &request.token, &csrf, &[("big.bin", &[7; 11])]).await;
    assert_eq!(too_large.status, 422, "{}", too_large.body);
    assert_eq!(too_large.texts("#upload-refused"), [words().refused_file_too_large]);
    assert_eq!((arrived_rows(&app, &request).await, stored_files(&app)), (0, 0));

    assert_eq!(upload(&uploader, &request.token, &csrf, &[("a.bin", &[1; 8])]).await.status, 303);
    let over_total = upload(&uploader, &request.token, &csrf, &[("b.bin", &[2; 8])]).await;
    assert_eq!(over_total.status, 422, "{}", over_total.body);
    assert_eq!(over_total.texts("#upload-refused"), [words().refused_total_too_large]);
    assert_eq!(upload(&uploader, &request.token, &csrf, &[("c.bin", &[3; 7])]).await.status, 303);
    let third = upload(&uploader, &request.token, &csrf, &[("d.bin", &[4; 1])]).await;
    assert_eq!(third.status, 422, "{}", third.body);
    assert_eq!(third.texts("#upload-refused"), [words().refused_too_many]);
    assert_eq!((arrived_rows(&app, &request).await, stored_files(&app)), (2, 2));

    // Nothing to finish with is refused too.
    let empty = make_request(&app, roomy()).await;
    let other = app.browser();
    let csrf = verify_uploader(&app, &other, &empty.token).await.csrf_token();
    let finished = other.post_form(&format!("/s/{}/finish", empty.token), &[("csrf_token", &csrf)]).await;
    assert_eq!(finished.status, 422, "{}", finished.body);
}

async fn when_the_retention_ends_the_gc_removes_what_arrived(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = app.browser();
    let csrf = verify_uploader(&app, &uploader, &request.token).await.csrf_token();
    assert_eq!(upload(&uploader, &request.token, &csrf, &[("kept.pdf", b"kept")]).await.status, 303);
    let finished = uploader.post_form(&format!("/s/{}/finish", request.token), &[("csrf_token", &csrf)]).await;
    assert_eq!(finished.status, 303);
    let gc = async || app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await.unwrap().unwrap();

    // A day before the retention (7 days) ends, the files stay.
    crate::support::clock::shift_back(
        app.db(),
        "shares",
        &["consumed_at", "expires_at"],
        6 * DAY,
        &format!("id = {}", request.id),
    )
    .await;
    gc().await;
    assert_eq!(stored_files(&app), 1);

    crate::support::clock::shift_back(
        app.db(),
        "shares",
        &["consumed_at", "expires_at"],
        DAY + HOUR,
        &format!("id = {}", request.id),
    )
    .await;
    gc().await;
    assert_eq!(stored_files(&app), 0, "the bytes are gone after the retention");
    let status: i64 =
        count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND status = 'purged'", request.id).await;
    assert_eq!(status, 1);
    // The files were stored encrypted: their keys went first, then their bytes.
    let kinds = event_kinds(&app, request.id).await;
    assert!(kinds.ends_with(&["key_destroyed".into(), "purged".into()]), "{kinds:?}");
    let in_order = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                     WHERE s.id = $1 AND f.wrapped_key IS NULL AND f.key_destroyed_at <= f.purged_at";
    assert_eq!(count(app.db(), in_order, request.id).await, 1, "the key went first, then the bytes");
}

async fn a_request_left_unanswered_past_its_link_loses_what_was_uploaded(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    let uploader = app.browser();
    let csrf = verify_uploader(&app, &uploader, &request.token).await.csrf_token();
    assert_eq!(upload(&uploader, &request.token, &csrf, &[("draft.pdf", b"draft")]).await.status, 303);
    assert_eq!(stored_files(&app), 1);

    crate::support::clock::set_ago(app.db(), "shares", &["expires_at"], 1, &format!("id = {}", request.id)).await;
    app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await.unwrap().unwrap();
    assert_eq!(stored_files(&app), 0, "nothing uploaded outlives an unanswered request");
    let kinds = event_kinds(&app, request.id).await;
    assert!(kinds.ends_with(&["expired".into(), "key_destroyed".into(), "purged".into()]), "{kinds:?}");
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender.get(&format!("/requests/{}", request.id)).await;
    assert_eq!(page.attr("#request-state", "data-state").as_deref(), Some("purged"));
    assert_eq!(uploader.open_link(&request.token).await.status, 404, "the link is gone");
}

/// A request the uploader answered with `files`; answers it and the uploader's browser.
pub(crate) async fn answered_request(app: &TestApp, files: &[(&str, &[u8])]) -> (TestRequest, Browser) {
    let request = make_request(app, roomy()).await;
    let uploader = app.browser();
    let csrf = verify_uploader(app, &uploader, &request.token).await.csrf_token();
    assert_eq!(upload(&uploader, &request.token, &csrf, files).await.status, 303);
    let finished = uploader.post_form(&format!("/s/{}/finish", request.token), &[("csrf_token", &csrf)]).await;
    assert_eq!(finished.status, 303);
    (request, uploader)
}

async fn only_the_requesting_sender_fetches_what_arrived_each_file_or_the_archive(backend: Backend) {
    let app = quiet_app(backend).await;
    let files: [(&str, &[u8]); 2] = [("契約書.pdf", b"%PDF contract"), ("scan.png", b"PNG scan")];
    let (request, uploader) = answered_request(&app, &files).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;

    let page = sender.get(&format!("/requests/{}", request.id)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.attr("#request-state", "data-state").as_deref(), Some("answered"));
    assert_eq!(page.texts(".arrived .file-name"), ["契約書.pdf", "scan.png"]);
    // The timeline speaks of the person asked, not of a recipient.
    assert!(page.body.contains("依頼した方がアドレスを確認しました"), "{}", page.body);
    for _ in 0..2 {
        let one = sender.client.get(sender.url(&format!("/requests/{}/files/1", request.id))).send().await.unwrap();
        assert_eq!(one.status(), 200);
        assert_eq!(one.bytes().await.unwrap().as_ref(), b"PNG scan", "as often as needed");
    }
    let archive = sender.client.get(sender.url(&format!("/requests/{}/archive", request.id))).send().await.unwrap();
    assert_eq!(archive.status(), 200);
    assert_eq!(archive.headers()["content-type"], "application/zip");
    let archive = archive.bytes().await.unwrap();
    assert_eq!(crate::recipient_bundles::opened_with_python(&archive), crate::recipient_bundles::entries_of(&files));

    // Another sender, an anonymous browser and the uploader's own session get nothing.
    app.create_sender_with_password("other@example.test", "Other Ono", PASSWORD).await;
    let other = app.sign_in("other@example.test", PASSWORD).await;
    for path in [
        format!("/requests/{}", request.id),
        format!("/requests/{}/files/0", request.id),
        format!("/requests/{}/archive", request.id),
    ] {
        assert_eq!(other.get(&path).await.status, 404, "{path}");
        for outsider in [&app.browser(), &uploader] {
            let answer = outsider.get(&path).await;
            assert!(
                answer.status == 303 || answer.status == 200 && answer.body.contains("/login"),
                "{path}: {}",
                answer.status
            );
            assert!(!answer.body.contains("PNG scan"));
        }
    }
    for path in ["file", "files/0"] {
        let through_link = uploader.get(&format!("/s/{}/{path}", request.token)).await;
        assert_ne!(through_link.status, 200, "{path}");
        assert!(!through_link.body.contains("contract"));
    }
}

async fn the_sender_makes_a_request_on_the_dashboard_and_deletes_the_files_at_once(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    let sender = app.sign_in(SENDER, PASSWORD).await;
    let list = sender.get("/requests").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let fields = [
        ("csrf_token", list.csrf_token()),
        ("uploader", UPLOADER.to_owned()),
        ("message", "The receipts for March".to_owned()),
        ("expires_in", "3d".to_owned()),
        ("max_files", "3".to_owned()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = sender.post_form("/requests", &fields).await;
    assert_eq!(created.status, 303, "{}", created.body);
    let id: i64 = created.header("location").unwrap().rsplit('/').next().unwrap().parse().unwrap();
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, [UPLOADER]);
    let text = mail.text();
    let start = text.find("/s/").expect("the mail carries the link");
    let token = text[start + 3..start + 3 + 64].to_owned();
    let listed = sender.get("/requests").await;
    assert_eq!(listed.attrs(".request-row", "data-state"), ["open"]);

    let request = TestRequest { id, token };
    let uploader = app.browser();
    let csrf = verify_uploader(&app, &uploader, &request.token).await.csrf_token();
    assert_eq!(upload(&uploader, &request.token, &csrf, &[("march.pdf", b"receipts")]).await.status, 303);
    assert_eq!(uploader.post_form(&format!("/s/{}/finish", request.token), &[("csrf_token", &csrf)]).await.status, 303);
    assert_eq!(stored_files(&app), 1);

    let page = sender.get(&format!("/requests/{id}")).await;
    let deleted = sender.post_form(&format!("/requests/{id}/delete"), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    app.state.services.gc.try_pass(watasu::maintenance::Trigger::Cli).await.unwrap().unwrap();
    assert_eq!(stored_files(&app), 0, "deleted with the next GC pass");
    let page = sender.get(&format!("/requests/{id}")).await;
    assert_eq!(page.attr("#request-state", "data-state").as_deref(), Some("purged"));
    assert_eq!(sender.get(&format!("/requests/{id}/archive")).await.status, 404);
}

async fn deleting_the_senders_account_removes_their_requests_and_what_arrived(backend: Backend) {
    use crate::deletion::fixtures::{admin_case, runner};
    let app = quiet_app(backend).await;
    let (request, _) = answered_request(&app, &[("id.png", b"PNG id")]).await;
    let open = make_request(&app, roomy()).await;
    let sender_id = count(app.db(), "SELECT sender_id FROM shares WHERE id = $1", request.id).await;
    assert_eq!(stored_files(&app), 1);

    let runner = runner(&app, "requests");
    let case = admin_case(&runner, sender_id).await;
    assert_eq!(runner.run_case(case.id).await.unwrap(), Some(watasu::deletion::CaseState::Completed));

    assert_eq!(stored_files(&app), 0);
    for table in [
        "SELECT count(*) FROM file_requests WHERE handover_id > $1",
        "SELECT count(*) FROM shares WHERE id > $1",
        "SELECT count(*) FROM files WHERE id > $1",
    ] {
        assert_eq!(count(app.db(), table, 0).await, 0, "{table}");
    }
    assert_eq!(app.browser().open_link(&open.token).await.status, 404);
}

async fn a_request_locked_by_wrong_codes_is_unlocked_by_its_sender_from_its_page(backend: Backend) {
    let app = quiet_app(backend).await;
    let request = make_request(&app, roomy()).await;
    crate::support::execute(app.db(), watasu::sql!("UPDATE shares SET locked_at = " now " WHERE id = $1"), request.id)
        .await;
    assert_eq!(app.browser().open_link(&request.token).await.status, 403, "locked for the uploader");

    let sender = app.sign_in(SENDER, PASSWORD).await;
    let page = sender.get(&format!("/requests/{}", request.id)).await;
    assert_eq!(page.texts("#unlock").len(), 1, "{}", page.body);
    let unlocked =
        sender.post_form(&format!("/requests/{}/unlock", request.id), &[("csrf_token", &page.csrf_token())]).await;
    assert_eq!(unlocked.status, 303, "{}", unlocked.body);
    verify_uploader(&app, &app.browser(), &request.token).await;
    assert!(event_kinds(&app, request.id).await.contains(&"unlocked".to_owned()));
}

both_backends!(
    a_request_locked_by_wrong_codes_is_unlocked_by_its_sender_from_its_page,
    deleting_the_senders_account_removes_their_requests_and_what_arrived,
    a_request_left_unanswered_past_its_link_loses_what_was_uploaded,
    only_the_requesting_sender_fetches_what_arrived_each_file_or_the_archive,
    the_sender_makes_a_request_on_the_dashboard_and_deletes_the_files_at_once,
    a_request_made_on_the_command_line_mails_the_uploader_and_lists_as_open,
    a_stranger_holding_the_link_sees_what_the_uploader_sees_and_uploads_nothing,
    the_verified_uploader_uploads_two_files_removes_one_and_finishes_once,
    an_upload_over_the_requests_limits_is_refused_and_keeps_nothing,
    when_the_retention_ends_the_gc_removes_what_arrived,
);
