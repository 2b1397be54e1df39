//! The share list says what needs attention: the time left on a waiting share and when a
//! downloaded one was downloaded; the receipt's subject names who received which file, and the
//! receipt links to the share.

use std::time::Duration;

use watasu::db::Sql;

use crate::{
    both_backends,
    support::{Backend, PASSWORD, RECIPIENT, TestApp, eventually, execute},
};

const SENDER: &str = "sender@example.test";

async fn the_list_shows_time_left_and_download_time_and_the_receipt_names_both_ends(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    execute(app.db(), Sql::same("UPDATE users SET lang = 'en' WHERE id = $1"), sender).await;
    let waiting = app.fake_share().sender(sender).recipient(RECIPIENT).file("waiting.pdf", b"w").create().await;
    let fetched = app.fake_share().sender(sender).recipient(RECIPIENT).file("plan.pdf", b"plan").create().await;
    let (recipient, csrf) = app.granted_browser(&fetched).await;
    let download = recipient.download(&fetched.token, &csrf).await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"plan");
    let to_sender = async || app.smtp.messages().into_iter().find(|m| m.to == [SENDER]);
    eventually(Duration::from_secs(10), "the receipt", async || to_sender().await.is_some()).await;
    let receipt = to_sender().await.unwrap();

    let dashboard = app.sign_in(SENDER, PASSWORD).await;
    let list = dashboard.get_with("/shares", &[("Accept-Language", "en")]).await;

    let left = list.texts(&format!(".share-row a[href$='/shares/{}'] [data-outcome-time]", waiting.id));
    assert_eq!(left.len(), 1, "{}", list.body);
    assert!(left[0].ends_with(" left"), "{left:?}");
    let downloaded = list.texts(&format!(".share-row a[href$='/shares/{}'] [data-outcome-time]", fetched.id));
    assert_eq!(downloaded.len(), 1, "{}", list.body);
    assert!(downloaded[0].starts_with("Downloaded "), "{downloaded:?}");
    assert_eq!(receipt.subject(), format!("{RECIPIENT} downloaded plan.pdf"));
    assert!(receipt.text().contains(&format!("{}/shares/{}", app.base, fetched.id)), "{}", receipt.text());
}

both_backends!(the_list_shows_time_left_and_download_time_and_the_receipt_names_both_ends);
