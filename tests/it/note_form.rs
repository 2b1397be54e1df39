//! A secret note sent from the new-share form, without JavaScript: one handover of a note (no
//! file) with a share per address, the note on no page of the sender's and in no mail; a note
//! beside files, an empty note and one over the limit come back at the note's field with
//! everything typed and nothing made; and the sender's list says "read" once a recipient read it.

use std::time::Duration;

use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp, count, shares::TestShare, smtp::ReceivedMail},
};

const NOTE: &str = "door code 4711-0815";

/// A file of the form: its name and content.
type File<'a> = (&'a str, &'a [u8]);

/// Posts the form as a browser without JavaScript would: the address field, the choice of a
/// note with `note`, then `files` (the last fields).
async fn post_note(browser: &Browser, recipients: &str, note: &str, files: &[File<'_>]) -> Page {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let mut form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf)
        .text("recipient", recipients.to_owned())
        .text("kind", "note")
        .text("note", note.to_owned())
        .text("expires_in", "1d")
        .text("message", "For the back door")
        .text("mail_lang", "en")
        .text("notify", "1");
    for (name, content) in files {
        form = form.part("file", reqwest::multipart::Part::bytes(content.to_vec()).file_name(name.to_string()));
    }
    let request = browser.client.post(browser.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
    Page::read(request.header("Accept-Language", "en").multipart(form).send().await.unwrap()).await
}

/// Handovers, shares, handovers with a note, files and uploads, all of them.
async fn held(app: &TestApp) -> [i64; 5] {
    [
        count(app.db(), "SELECT count(*) FROM handovers WHERE id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM handovers WHERE has_note AND id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM files WHERE handover_id > $1", 0).await,
        count(app.db(), "SELECT count(*) FROM uploads WHERE id > $1", 0).await,
    ]
}

/// The share a handover for one address made, by its link on the created page.
async fn the_share(app: &TestApp, created: &Page, sender_id: i64) -> TestShare {
    let link = created.attr("#share-link", "value").expect("the link is on the created page");
    let token = link.rsplit("/s/").next().unwrap().to_owned();
    let id = count(app.db(), "SELECT max(id) FROM shares WHERE sender_id = $1", sender_id).await;
    TestShare { id, token, sender_id }
}

/// The first mail with one of `subjects`, waiting for it.
async fn mail_with_subject(app: &TestApp, subjects: [&str; 2]) -> ReceivedMail {
    let mut count = 1;
    loop {
        let mails = app.smtp.wait_for(count, Duration::from_secs(10)).await;
        if let Some(mail) = mails.iter().find(|mail| subjects.contains(&mail.subject().as_str())) {
            return mail.clone();
        }
        count = mails.len() + 1;
    }
}

async fn a_note_to_two_addresses_is_one_handover_and_is_on_no_page_of_the_sender_nor_in_a_mail(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;

    let answer = post_note(&browser, "one@example.test, two@example.test", NOTE, &[]).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let created = answer.follow_created(&browser.client, &browser.base).await;

    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.texts("[data-created-recipient]"), ["one@example.test", "two@example.test"]);
    assert_eq!(created.texts("[data-created-note]").len(), 1, "{}", created.body);
    assert!(created.texts("[data-created-file]").is_empty(), "{}", created.body);
    assert!(!created.body.contains("4711"), "the created page shows the note: {}", created.body);
    assert_eq!(held(&app).await, [1, 2, 1, 0, 0]);
    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    for recipient in ["one@example.test", "two@example.test"] {
        let mail = mails.iter().find(|mail| mail.to == [recipient]).expect("a mail per recipient");
        assert!(!mail.text().contains("4711") && !mail.data.contains("4711"), "the mail holds the note: {}", mail.data);
    }
    let list = browser.get_with("/shares", &[("Accept-Language", "en")]).await;
    assert_eq!(list.texts("[data-note] .share-name"), ["A secret note", "A secret note"]);
    assert!(!list.body.contains("4711"));
    app.stop().await;
}

async fn a_refused_note_comes_back_at_its_field_with_everything_typed_and_nothing_made(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let too_long = "a".repeat(watasu::share::note::NOTE_LIMIT + 1);
    let cases: [(&str, &[File], &str); 3] = [
        (NOTE, &[("a.pdf", b"a file")], "A secret note is sent without files."),
        (" \r\n ", &[], "Write the note to send."),
        (&too_long, &[], "The note is longer than 4 KiB."),
    ];

    for (note, files, said) in cases {
        let page = post_note(&browser, "one@example.test, two@example.test", note, files).await;

        assert_eq!(page.status, 400, "{}", page.body);
        assert!(page.texts("#note-error").concat().starts_with(said), "{said}: {}", page.body);
        assert_eq!(page.attr("#note", "aria-invalid").as_deref(), Some("true"));
        assert_eq!(page.texts("#note"), [note.trim()]);
        assert_eq!(page.attr("#kind-note", "checked").as_deref(), Some(""), "the choice of a note was lost");
        assert_eq!(page.attr("#recipient", "value").as_deref(), Some("one@example.test, two@example.test"));
        assert_eq!(page.texts("#message"), ["For the back door"]);
        assert_eq!(held(&app).await, [0, 0, 0, 0, 0], "{said}");
    }
    app.stop().await;
}

async fn the_sender_s_list_and_share_page_say_read_once_the_recipient_read_the_note(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let answer = post_note(&browser, "one@example.test", NOTE, &[]).await;
    let created = answer.follow_created(&browser.client, &browser.base).await;
    let sender_id = count(app.db(), "SELECT min(sender_id) FROM shares WHERE id > $1", 0).await;
    let share = the_share(&app, &created, sender_id).await;
    let before = browser.get_with("/shares", &[("Accept-Language", "en")]).await;
    assert_eq!(before.texts("[data-note] .status"), ["Waiting"]);

    let recipient = app.browser();
    let csrf = app.verify_as(&recipient, &share, "one@example.test").await.csrf_token();
    let note_path = format!("/s/{}/note", share.token);
    assert_eq!(recipient.post_form(&note_path, &[("csrf_token", &csrf)]).await.status, 303);
    assert!(recipient.get(&note_path).await.body.contains(NOTE));

    let list = browser.get_with("/shares", &[("Accept-Language", "en")]).await;
    assert_eq!(list.texts("[data-note] .status"), ["Read"]);
    assert!(list.texts("[data-outcome-time]").concat().starts_with("Read "), "{}", list.body);
    let japanese = browser.get_with("/shares", &[("Accept-Language", "ja")]).await;
    assert_eq!(japanese.texts("[data-note] .status"), ["閲覧済み"]);
    let page = browser.get_with(&format!("/shares/{}", share.id), &[("Accept-Language", "en")]).await;
    assert_eq!(page.texts("[data-share-note]"), ["A secret note"]);
    assert_eq!(page.texts("#share-status .status"), ["Read"]);
    assert!(!page.body.contains("4711"), "{}", page.body);
    let events = page.texts(".timeline li");
    assert!(events.iter().any(|event| event.ends_with("Note read")), "{events:?}");
    assert!(!events.iter().any(|event| event.contains("Download")), "{events:?}");
    let subjects = ["one@example.test read your secret note", "one@example.test さんが秘密のメモを閲覧しました"];
    let receipt = mail_with_subject(&app, subjects).await;
    let text = receipt.text();
    assert!(!text.contains("4711") && !text.contains("ownload") && !text.contains("ダウンロード"), "{text}");
    app.stop().await;
}

both_backends!(
    a_note_to_two_addresses_is_one_handover_and_is_on_no_page_of_the_sender_nor_in_a_mail,
    a_refused_note_comes_back_at_its_field_with_everything_typed_and_nothing_made,
    the_sender_s_list_and_share_page_say_read_once_the_recipient_read_the_note,
);
