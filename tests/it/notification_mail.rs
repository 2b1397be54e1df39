//! The notification mail does not look anonymous: it comes from the sender's name (at the
//! server's own address) and names the file and its size, unless the sender switched that off
//! for the share; the link's landing page still names nothing before the code.

use std::time::Duration;

use watasu::i18n::Lang;

use crate::support::{Backend, Browser, PASSWORD, Page, TestApp};

const SENDER_EMAIL: &str = "hanako@example.test";

/// Posts the new-share form without JavaScript, in English, with `fields` and a file.
async fn post_new_share(browser: &Browser, fields: &[(&str, &str)], file: (&str, &[u8])) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new().text("csrf_token", csrf);
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    form = form.part("file", reqwest::multipart::Part::bytes(file.1.to_vec()).file_name(file.0.to_owned()));
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.header("Accept-Language", "en").multipart(form).send().await.unwrap()).await
}

/// The From mailbox, decoded: its display name and its address.
fn from_of(data: &str) -> (String, String) {
    let message = mail_parser::MessageParser::default().parse(data).expect("a mail");
    let from = message.from().and_then(|from| from.first()).expect("a From mailbox");
    (from.name().unwrap_or_default().to_owned(), from.address().unwrap_or_default().to_owned())
}

async fn the_notification_comes_from_the_sender_s_name_and_names_the_file_unless_switched_off(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password(SENDER_EMAIL, "Hanako Sato", PASSWORD).await;
    let browser = app.sign_in(SENDER_EMAIL, PASSWORD).await;
    let form = browser.get("/shares/new").await;
    let base = [("recipient", "r@example.test"), ("expires_in", "1d"), ("mail_lang", "en"), ("notify", "1")];
    let named = [&base[..], &[("name_file", "1")]].concat();

    let first = post_new_share(&browser, &named, ("plan.pdf", &[7u8; 1500])).await;
    let named_mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.remove(0);
    let second = post_new_share(&browser, &base, ("merger-secret.pdf", &[7u8; 1500])).await;
    let unnamed_mail = app.smtp.wait_for(2, Duration::from_secs(10)).await.remove(1);

    assert_eq!(
        form.attr("input[name=name_file]", "checked").as_deref(),
        Some(""),
        "naming the file is not the default"
    );
    assert!(first.status.is_success() || first.status.is_redirection(), "{}", first.body);
    assert!(second.status.is_success() || second.status.is_redirection(), "{}", second.body);
    let file_line = format!("{} plan.pdf (1.5 KB)", Lang::En.text().mail.notify_file);
    assert!(named_mail.text().contains(&file_line), "{}", named_mail.text());
    assert!(!unnamed_mail.text().contains("merger-secret"), "{}", unnamed_mail.text());
    assert!(!unnamed_mail.data.contains("merger-secret"), "the name is in the mail's HTML");
    for mail in [&named_mail, &unnamed_mail] {
        let (name, address) = from_of(&mail.data);
        assert!(name.starts_with("Hanako Sato"), "{name}");
        assert_ne!(address, SENDER_EMAIL, "the From address is the sender's");
    }

    let token = named_mail.text().split("/s/").nth(1).unwrap()[..64].to_owned();
    let landing = app.browser().open_link(&token).await;
    assert_eq!(landing.status, 200);
    assert!(!landing.body.contains("plan.pdf"), "the landing page names the file before the code");
}

crate::both_backends!(the_notification_comes_from_the_sender_s_name_and_names_the_file_unless_switched_off);
