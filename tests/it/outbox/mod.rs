//! The mail outbox: notification mails survive an SMTP outage, are retried with capped backoff,
//! are delivered exactly once (also with two workers racing), are never lost (a worker that
//! crashed mid-send is recovered), give up after 20 attempts, and do not keep the share link once
//! delivered. Most cases drive the outbox on a bare database (no app, so no background worker
//! races the test); one checks that the running server's worker delivers, and two run the real
//! `watasu share create`.

mod delivery;
mod headers;
mod shares;

use std::{sync::Arc, time::Duration};

use tokio::sync::Barrier;
use watasu::{
    db::{Db, Dialect, Sql},
    i18n::Lang,
    mail::{
        self, Mailer,
        messages::{Notification, notification_mail},
        outbox::{DeliveryReport, MailKind, Outbox},
    },
    on_db,
    secret::{SecretKey, sha256_hex},
    sql,
};

use crate::support::clock;
use crate::{
    both_backends,
    support::{
        Backend, SmtpSink, TestApp, count, eventually, execute, fresh_database,
        process::{Server, run_watasu},
    },
};

const LINK: &str = "https://watasu.example.test/s/secret-link-token-0123456789";

/// A database with the schema, an SMTP sink, a mailer pointed at it and the outbox: no app and so
/// no worker of its own.
struct Bench {
    dir: tempfile::TempDir,
    url: String,
    db: Db,
    smtp: SmtpSink,
    mailer: Arc<dyn Mailer>,
    outbox: Outbox,
}

async fn bench(backend: Backend) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, dir.path()).await;
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    db.migrate().await.unwrap();
    let smtp = SmtpSink::start().await;
    let mailer = mail::from_settings(Some(&smtp.url()), dir.path(), Duration::from_secs(30)).unwrap();
    // The key the CLI commands run on this folder find there too.
    let key = SecretKey::load_or_generate(&dir.path().join("secret.key")).unwrap();
    Bench { outbox: Outbox::new(db.clone(), &key), dir, url, db, smtp, mailer }
}

impl Bench {
    fn mailer(&self) -> &dyn Mailer {
        self.mailer.as_ref()
    }

    async fn enqueue_for(&self, to: &str) -> i64 {
        self.outbox.enqueue(None, MailKind::ShareNotification, &notification(to)).await.unwrap()
    }

    async fn deliver(&self) -> DeliveryReport {
        self.outbox.deliver_due(self.mailer(), 50).await.unwrap()
    }

    /// Ends a row's backoff now, by the database's clock.
    async fn make_due(&self, id: i64) {
        clock::set_ago(&self.db, "mail_outbox", &["next_attempt_at"], 1, &clock::id(id)).await;
    }

    async fn status(&self, id: i64) -> String {
        text(&self.db, "SELECT status FROM mail_outbox WHERE id = $1", id).await
    }

    async fn attempts(&self, id: i64) -> i64 {
        count(&self.db, "SELECT CAST(attempts AS BIGINT) FROM mail_outbox WHERE id = $1", id).await
    }

    async fn body_len(&self, id: i64) -> i64 {
        count(&self.db, "SELECT CAST(length(message) AS BIGINT) FROM mail_outbox WHERE id = $1", id).await
    }

    /// Seconds from now until the row may be tried again.
    async fn backoff_left(&self, id: i64) -> f64 {
        const LEFT: Sql = sql!(
            "SELECT "
            { sqlite: "next_attempt_at - unixepoch('subsec')", postgres: "CAST(EXTRACT(EPOCH FROM next_attempt_at - now()) AS float8)" }
            " FROM mail_outbox WHERE id = $1"
        );
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&LEFT)).bind(id).fetch_one(pool).await.unwrap())
    }
}

fn notification(to: &str) -> lettre::Message {
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
    notification_mail(&from, to, Lang::En, &n).unwrap()
}

async fn text(db: &Db, sql: &'static str, bind: i64) -> String {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap())
}

fn report(sent: u32, failed: u32, dead: u32) -> DeliveryReport {
    DeliveryReport { sent, failed, dead, dropped: 0 }
}

// No pause is needed before counting what the sink holds: every delivery here is awaited, and the
// sink records a message before it answers 250, so a mail the outbox counts as sent is already
// there, and one it did not send cannot arrive later (no worker runs beside the test).

/// Every column of a row as (name, bytes): byte columns as they are, text as UTF-8.
fn columns_as_bytes<R: sqlx::Row>(row: &R) -> Vec<(String, Vec<u8>)>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    use sqlx::Column;
    row.columns()
        .iter()
        .map(|c| {
            let bytes = row
                .try_get::<Vec<u8>, _>(c.ordinal())
                .or_else(|_| row.try_get::<String, _>(c.ordinal()).map(String::into_bytes));
            (c.name().to_owned(), bytes.unwrap_or_default())
        })
        .collect()
}

/// Every column of an outbox row, raw: none may hold the link or its token, as they are or in any
/// encoding a mail uses (the body is also read back as a mail, which undoes base64 and
/// quoted-printable).
async fn assert_row_holds_no_link(db: &Db, id: i64, url: &str, token: &str) {
    const SQL: &str = "SELECT * FROM mail_outbox WHERE id = $1";
    let values = on_db!(db, |pool| columns_as_bytes(&sqlx::query(SQL).bind(id).fetch_one(pool).await.unwrap()));
    assert!(values.iter().any(|(name, bytes)| name == "message" && !bytes.is_empty()), "the mail is still queued");
    let lower = |b: &[u8]| String::from_utf8_lossy(b).to_ascii_lowercase();
    for (name, bytes) in &values {
        let text = lower(bytes);
        let decoded = watasu::mail::dev_outbox::parse(&String::from_utf8_lossy(bytes)).text.to_ascii_lowercase();
        for haystack in [&text, &decoded, &text.replace("=\r\n", "")] {
            assert!(!haystack.contains(token), "column {name} holds the token");
            assert!(!haystack.contains(&url.to_ascii_lowercase()), "column {name} holds the link");
        }
    }
}

/// Runs `watasu share revoke` on the bench's database.
async fn share_revoke(bench: &Bench, url: &str) {
    let args = ["share", "revoke", url, "--data-dir", bench.dir.path().to_str().unwrap(), "--database-url", &bench.url];
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let (code, _, stderr) = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_watasu(&args, &[])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{stderr}");
}

/// Runs `watasu user add` and then `watasu share create` on the bench's database, mail to `smtp_url`.
async fn share_create(bench: &Bench, smtp_url: &str) -> (i32, String, String) {
    let data_dir = bench.dir.path().to_str().unwrap().to_owned();
    let database_url = bench.url.clone();
    let file = bench.dir.path().join("report.txt");
    std::fs::write(&file, b"the file contents\n").unwrap();
    let file = file.to_str().unwrap().to_owned();
    let smtp_url = smtp_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let common = ["--data-dir", &data_dir, "--database-url", &database_url];
        let (code, _, stderr) = run_watasu(
            &[&["user", "add", "--email", "sender@example.test", "--name", "Sender Sato"], &common[..]].concat(),
            &[],
        );
        assert_eq!(code, 0, "{stderr}");
        let create =
            ["share", "create", "--from", "sender@example.test", "--to", "recipient@example.test", "--file", &file];
        let mail = ["--smtp-url", &smtp_url, "--mail-from", "watasu <watasu@example.test>"];
        run_watasu(&[&create[..], &common[..], &mail[..]].concat(), &[])
    })
    .await
    .unwrap()
}
