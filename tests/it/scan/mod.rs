//! The virus scan by the real clamd, failing closed: a clean file is released and its mail sent;
//! the EICAR file refuses its handover (shares end, the timeline says which file, the GC deletes
//! the bytes, nothing is ever served); clamd down or silent keeps the file held until it answers,
//! and refused after the retry limit; a file too large for clamd goes by the admin's policy. A
//! request's uploaded file is scanned alike, and held from or refused to its sender alone.

pub(crate) mod held;
pub(crate) mod inbound;
mod verdicts;

use std::time::Duration;

use watasu::{
    accounts::EmailAddress,
    i18n::Lang,
    scan::TooLargePolicy,
    services::{
        mails::Delivery,
        sharing::{Created, Handover, Source, UploadFile},
    },
    share::{Message, ShareTtl},
};

use crate::support::{Backend, PASSWORD, Page, TestApp, texts};

const SENDER: &str = "sender@example.test";
const RECIPIENT: &str = "client@example.test";

/// The app with the outbound scan on, asking clamd at `clamd` (`tcp://…`).
pub(crate) async fn scanning_app(
    backend: Backend,
    clamd: &str,
    adjust: impl FnOnce(&mut watasu::config::Settings),
) -> TestApp {
    let clamd = clamd.parse().unwrap();
    let app = TestApp::spawn_with(backend, |s| {
        s.scan.clamd = Some(clamd);
        s.scan.scan_outbound = true;
        s.scan.scan_too_large = TooLargePolicy::Refuse;
        s.access_time_gc = false;
        s.metrics_token = Some(watasu::secret::SecretString::new(METRICS_TOKEN));
        adjust(s);
    })
    .await;
    app.create_sender_with_password(SENDER, "Sender Sato", PASSWORD).await;
    app
}

const METRICS_TOKEN: &str = "metrics-token-0f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// The sender hands `files` to the recipient as the new-share form does; answers the share.
pub(crate) async fn send(app: &TestApp, files: &[(&str, &[u8])]) -> Created {
    let services = &app.state.services;
    let sender = services.accounts.active_by_email(&EmailAddress::parse(SENDER).unwrap()).await.unwrap().unwrap();
    let handover = Handover {
        recipients: vec![EmailAddress::parse(RECIPIENT).unwrap()],
        files: files
            .iter()
            .map(|(name, bytes)| UploadFile {
                file_name: name,
                content_type: "application/octet-stream",
                source: Source::Stream(Box::pin(*bytes)),
            })
            .collect(),
        note: None,
        ttl: ShareTtl::parse(Duration::from_secs(86_400), Duration::from_secs(30 * 86_400)).unwrap(),
        message: Message::parse("").unwrap(),
        lang: Lang::En,
        notify_on_download: false,
        name_file_in_mail: true,
        allow_reply: false,
    };
    services.sharing.create(&sender, handover, async || Ok(()), Delivery::Background).await.unwrap().remove(0)
}

/// The link's token.
pub(crate) fn token(created: &Created) -> &str {
    created.link.rsplit_once("/s/").unwrap().1
}

/// The scan states of the share's files, in order.
async fn scan_states(app: &TestApp, share_id: i64) -> Vec<String> {
    texts(
        app.db(),
        "SELECT COALESCE(f.scan_state, 'none') FROM shares s JOIN files f ON f.handover_id = s.handover_id
          WHERE s.id = $1 ORDER BY f.position",
        share_id,
    )
    .await
}

/// Waits until the share's files are in `states`.
pub(crate) async fn wait_for_states(app: &TestApp, share_id: i64, states: &[&str]) {
    let what = format!("the files becoming {states:?}");
    crate::support::eventually(Duration::from_secs(30), &what, async || scan_states(app, share_id).await == states)
        .await;
}

/// The share page as its sender sees it.
async fn share_page(app: &TestApp, share_id: i64) -> Page {
    let browser = app.sign_in(SENDER, PASSWORD).await;
    let page = browser.get(&format!("/shares/{share_id}?lang=en")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

/// `/readyz`'s body.
async fn readyz(app: &TestApp) -> String {
    app.browser().get("/readyz").await.body
}

/// A metrics scrape.
async fn scrape(app: &TestApp) -> String {
    let authorization = format!("Bearer {METRICS_TOKEN}");
    let page = app.browser().get_with("/metrics", &[("Authorization", &authorization)]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.body
}

/// The sender's account reads its mails in `lang`.
async fn sender_reads(app: &TestApp, lang: Lang) {
    let statement = match lang {
        Lang::En => watasu::db::Sql::same("UPDATE users SET lang = 'en' WHERE $1 = $1"),
        Lang::Ja => watasu::db::Sql::same("UPDATE users SET lang = 'ja' WHERE $1 = $1"),
    };
    crate::support::execute(app.db(), statement, 0).await;
}

/// The notice of a refused handover, to its sender: the one mail sent, none to the recipient.
async fn refusal_notice(app: &TestApp, lang: Lang) -> crate::support::smtp::ReceivedMail {
    let mail = app.smtp.wait_for(1, Duration::from_secs(30)).await.remove(0);
    assert_eq!(mail.to, [SENDER]);
    assert_eq!(mail.subject(), lang.text().dashboard.scan.mail_subject);
    assert_eq!(app.smtp.messages().len(), 1, "a mail went to the recipient");
    mail
}

/// Whether the notification mail left: counted in the outbox, not guessed from silence.
async fn notification_status(app: &TestApp, share_id: i64) -> Vec<String> {
    texts(app.db(), "SELECT status FROM mail_outbox WHERE share_id = $1 AND kind = 'share_notification'", share_id)
        .await
}
