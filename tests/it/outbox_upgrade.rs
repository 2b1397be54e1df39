//! A mail an older version queued with its body in the clear: start-up seals it, and it is still
//! delivered, link intact.

use std::time::Duration;

use watasu::{
    App,
    config::Config,
    db::Db,
    i18n::Lang,
    mail::{
        self,
        messages::{Notification, notification_mail},
        outbox::Outbox,
    },
    on_db,
};

use crate::{
    both_backends,
    support::{Backend, SmtpSink, fresh_database, test_settings},
};

const LINK: &str = "https://watasu.example.test/s/an-old-plain-link-token-0123456789";

async fn stored_body(db: &Db) -> Vec<u8> {
    const SQL: &str = "SELECT message FROM mail_outbox ORDER BY id DESC LIMIT 1";
    on_db!(db, |pool| sqlx::query_scalar(SQL).fetch_one(pool).await.unwrap())
}

async fn a_mail_body_an_older_version_stored_in_the_clear_is_sealed_at_start_and_still_delivered(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    db.migrate().await.unwrap();
    let from = watasu::mail::origin::MailOrigin::new(
        "watasu <watasu@example.test>".parse().unwrap(),
        &"https://watasu.example.test/".parse().unwrap(),
    );
    let n = Notification {
        sender_name: "Sender Sato",
        sender_email: "sender@example.test",
        message: "Here it is.",
        link: LINK,
        expires: "tomorrow",
        files: &[],
        file_count: 1,
    };
    let plain = notification_mail(&from, "r@example.test", Lang::En, &n).unwrap().formatted();
    const INSERT: &str = "INSERT INTO mail_outbox (kind, envelope_from, recipient, message)
                              VALUES ('share_notification', 'watasu@example.test', 'r@example.test', $1)";
    on_db!(&db, |pool| drop(sqlx::query(INSERT).bind(&plain).execute(pool).await.unwrap()));
    assert_eq!(stored_body(&db).await, plain, "the row is stored as an older version did");

    let smtp = SmtpSink::start().await;
    let config = Config::from_settings(test_settings(dir.path(), &url, &smtp)).unwrap();
    let app = App::build(config).await.unwrap();
    let sealed = stored_body(&db).await;
    assert!(!sealed.is_empty() && sealed != plain, "start-up left the body as it was");
    assert!(!String::from_utf8_lossy(&sealed).contains("an-old-plain-link-token"));

    let mailer = mail::from_settings(Some(&smtp.url()), dir.path(), Duration::from_secs(30)).unwrap();
    let outbox = Outbox::new(db.clone(), &app.state().services.parts().secret_key);
    assert_eq!(outbox.deliver_due(mailer.as_ref(), 10).await.unwrap().sent, 1);
    let mails = smtp.wait_for(1, Duration::from_secs(10)).await;
    assert!(mails[0].text().contains(LINK), "{}", mails[0].text());
}

both_backends!(a_mail_body_an_older_version_stored_in_the_clear_is_sealed_at_start_and_still_delivered);
