//! A file request in a real Chromium, in Japanese and English, on a phone and a desktop, with
//! JavaScript and without: the uploader's page before the code, the code step, the upload step
//! with a file chosen through the form and one refused, the "already answered" page, and the
//! sender's request list and page (the harness checks every page state with axe-core, and nothing
//! reaches past the right edge).

use std::time::Duration;

use watasu::{
    i18n::{Lang, format::human_size},
    request::RequestLimits,
    services::{mails::Delivery, requests::FileRequest},
    share::{Message, ShareTtl},
};

use crate::support::{
    Backend, PASSWORD, TestApp,
    browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
};

async fn request(app: &TestApp, sender: &str, uploader: &str, lang: Lang) -> String {
    let sender = watasu::accounts::EmailAddress::parse(sender).unwrap();
    let sender = app.state.services.accounts.active_by_email(&sender).await.unwrap().unwrap();
    let request = FileRequest {
        uploader: watasu::accounts::EmailAddress::parse(uploader).unwrap(),
        message: Message::parse("確定申告の書類をお願いします").unwrap(),
        ttl: ShareTtl::parse(Duration::from_secs(86_400), Duration::from_secs(30 * 86_400)).unwrap(),
        limits: RequestLimits { max_files: 3, max_file_bytes: 100, max_total_bytes: 200 },
        lang,
    };
    app.state.services.requests.create(&sender, request, Delivery::Background).await.unwrap().link
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_request_pages_pass_axe_in_both_languages_at_both_widths_with_and_without_javascript() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let files = tempfile::tempdir().unwrap();
    let (fits, too_large) = (files.path().join("領収書.pdf"), files.path().join("big.bin"));
    std::fs::write(&fits, b"%PDF receipts").unwrap();
    std::fs::write(&too_large, [0u8; 150]).unwrap();
    let rounds = [
        (Lang::Ja, BrowserOptions::desktop()),
        (Lang::Ja, BrowserOptions::phone().without_javascript()),
        (Lang::En, BrowserOptions::phone().language("en")),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let (sender, uploader) = (format!("sender-{round}@example.test"), format!("uploader-{round}@example.test"));
        app.create_sender_with_password(&sender, "佐藤 花子", PASSWORD).await;
        let link = request(&app, &sender, &uploader, lang).await;
        let rq = &lang.text().request;
        let javascript = options.javascript;
        let browser = BrowserSession::start(options).await;

        browser.goto(&link).await;
        assert_eq!(browser.text("h1").await, rq.asks_you.replace("{sender}", "佐藤 花子"), "round {round}");
        browser.assert_no_horizontal_overflow("the request before the code").await;
        let before = app.smtp.messages().len();
        browser.fill("input[name=email]", &uploader).await;
        browser.click("#step form[action$='/email'] button[type=submit]").await;
        browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
        let code = app.smtp.code_for_after(&uploader, before).await;
        browser.fill("#code", &code).await;
        browser.click("#step form[action$='/code'] button[type=submit]").await;
        browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
        browser.assert_no_horizontal_overflow("the upload step").await;

        browser.find("#request-files").await.send_keys(too_large.to_str().unwrap()).await.unwrap();
        browser.click("#step form[action$='/upload'] button[type=submit]").await;
        if javascript {
            // The page checks the request's room before a byte is sent.
            let said = rq
                .chosen_file_too_large
                .replace("{name}", "big.bin")
                .replace("{size}", &human_size(150, lang))
                .replace("{limit}", &human_size(100, lang));
            browser
                .wait_until("the refusal of the too large file", DEFAULT_WAIT, async |b| {
                    b.text("#file-error").await == said
                })
                .await;
            assert_eq!(browser.text("#upload-status").await, "", "round {round}: the refused file was sent");
            // The uploader's panel shows the moment a send starts (in the submit's own handler).
            let panel = browser.attr("#uploader", "hidden").await;
            assert_eq!(panel.as_deref(), Some("true"), "round {round}: the refused file started going");
            browser.goto(&link).await;
            browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
        } else {
            browser.wait_for("#upload-refused", DEFAULT_WAIT).await;
            assert_eq!(browser.text("#upload-refused").await, rq.refused_file_too_large, "round {round}");
        }
        browser.find("#request-files").await.send_keys(fits.to_str().unwrap()).await.unwrap();
        browser.click("#step form[action$='/upload'] button[type=submit]").await;
        browser.wait_for(".arrived .file-item", DEFAULT_WAIT).await;
        assert_eq!(browser.text(".arrived .file-name").await, "領収書.pdf");
        browser.assert_no_horizontal_overflow("the upload step with a file").await;
        browser.fill("#uploader-note", "3月分です").await;
        browser.click("#step form[action$='/finish'] button[type=submit]").await;
        browser.wait_for("section[data-status='410']", DEFAULT_WAIT).await;
        assert_eq!(browser.text("h1").await, rq.answered_title, "round {round}");

        browser.sign_in(&app.base, &sender).await;
        browser.goto(&format!("{}/requests", app.base)).await;
        browser.assert_no_horizontal_overflow("the request list").await;
        browser.click(".request-row a").await;
        browser.wait_for("#request-state[data-state=answered]", DEFAULT_WAIT).await;
        assert_eq!(browser.text(".uploader-note").await, "3月分です");
        browser.assert_no_horizontal_overflow("the request page").await;
        browser.close().await;
    }
    app.stop().await;
}

/// "Reply with a file" on the download step, then the reply's upload step without a second code
/// (both checked with axe-core by the harness), in both languages, with and without JavaScript.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reply_from_the_download_step_passes_axe_in_both_languages() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::desktop()),
        (Lang::En, BrowserOptions::phone().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let sender = app.create_sender(&format!("sender-{round}@example.test"), "佐藤 花子").await;
        let share = app.fake_share().sender(sender).allow_reply().create().await;
        let link = format!("{}/s/{}", app.base, share.token);
        let browser = BrowserSession::start(options).await;

        app.walk_to_download_step(&browser, &link, crate::support::RECIPIENT).await;
        browser.assert_no_horizontal_overflow("the download step with the reply button").await;
        assert_eq!(browser.text("#reply-title").await, lang.text().request.reply_button, "round {round}");
        browser.click("[data-reply]").await;
        browser.wait_for("#step[data-step=upload]", DEFAULT_WAIT).await;
        browser.assert_no_horizontal_overflow("the reply's upload step").await;
        browser.close().await;
    }
    app.stop().await;
}
