//! One unit system: the sender's pages and the recipient's page write the same file's size in the
//! same words, in decimal units.

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp},
};

/// 300 KiB: it read "300 KiB" to its sender and "307 KB" to its recipient.
static PLAN: [u8; 300 * 1024] = [7; 300 * 1024];

async fn the_sender_and_the_recipient_see_the_same_size(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender_id = app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let share = app.fake_share().sender(sender_id).file("plan.pdf", &PLAN).create().await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;

    let recipient_page = app.verify(&app.browser(), &share).await;
    let list = sender.get("/shares").await;
    let detail = sender.get(&format!("/shares/{}", share.id)).await;

    let size = watasu::i18n::format::human_size(PLAN.len(), Lang::Ja);
    assert_eq!(size, "307 KB");
    assert_eq!(recipient_page.texts(".file-size"), [size.as_str()]);
    let in_brackets = format!("({size})");
    assert_eq!(list.texts(".share-file .muted"), [in_brackets.as_str()], "{}", list.body);
    assert_eq!(detail.texts(".share-file .muted"), [in_brackets.as_str()], "{}", detail.body);
}

both_backends!(the_sender_and_the_recipient_see_the_same_size);
