//! The mail outbox: notification mails survive an SMTP outage, are retried with capped backoff,
//! are delivered exactly once (also with two workers racing), are never lost (a worker that
//! crashed mid-send is recovered), give up after 20 attempts, and do not keep the share link once
//! delivered. Most cases drive the outbox on a bare database (no app, so no background worker
//! races the test); one checks that the running server's worker delivers, and two run the real
//! `watasu share create`.

use std::{sync::Arc, time::Duration};

use tokio::sync::Barrier;
use watasu::{
    db::Db,
    i18n::Lang,
    mail::{
        self, Mailer,
        messages::{Notification, notification_mail},
        outbox::{DeliveryReport, MailKind, Outbox},
    },
    secret::{SecretKey, sha256_hex},
};

use crate::{
    both_backends,
    support::{Backend, SmtpSink, TestApp, count, execute, fresh_database, process::run_watasu},
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
    let mailer = mail::from_settings(Some(&smtp.url()), dir.path()).unwrap();
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
        execute(
            &self.db,
            "UPDATE mail_outbox SET next_attempt_at = unixepoch('subsec') - 1 WHERE id = $1",
            "UPDATE mail_outbox SET next_attempt_at = now() - interval '1 second' WHERE id = $1",
            id,
        )
        .await;
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
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_scalar("SELECT next_attempt_at - unixepoch('subsec') FROM mail_outbox WHERE id = $1")
                    .bind(id)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
            Db::Postgres(pool) => sqlx::query_scalar(
                "SELECT CAST(EXTRACT(EPOCH FROM next_attempt_at - now()) AS float8) FROM mail_outbox WHERE id = $1",
            )
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap(),
        }
    }
}

fn notification(to: &str) -> lettre::Message {
    let from = "watasu <watasu@example.test>".parse().unwrap();
    let n = Notification { sender_name: "Sender Sato", message: "Here it is.", link: LINK, expires: "tomorrow" };
    notification_mail(&from, to, Lang::En, &n).unwrap()
}

async fn text(db: &Db, sql: &'static str, bind: i64) -> String {
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
    }
}

fn report(sent: u32, failed: u32, dead: u32) -> DeliveryReport {
    DeliveryReport { sent, failed, dead }
}

// No pause is needed before counting what the sink holds: every delivery here is awaited, and the
// sink records a message before it answers 250, so a mail the outbox counts as sent is already
// there, and one it did not send cannot arrive later (no worker runs beside the test).

both_backends! {
    async fn a_queued_mail_is_delivered_once_and_its_stored_body_is_cleared(backend: Backend) {
        let bench = bench(backend).await;
        let id = bench.enqueue_for("recipient@example.test").await;
        assert_eq!(bench.status(id).await, "pending");
        assert!(bench.body_len(id).await > 0);

        assert_eq!(bench.deliver().await, report(1, 0, 0));
        assert_eq!(bench.deliver().await, report(0, 0, 0), "a sent mail is never sent again");

        let mails = bench.smtp.messages();
        assert_eq!(mails.len(), 1);
        assert_eq!(mails[0].to, ["recipient@example.test"]);
        assert!(mails[0].text().contains(LINK), "the delivered mail carries the link");
        assert_eq!(bench.status(id).await, "sent");
        assert_eq!(bench.body_len(id).await, 0, "no link outlives delivery in the database");
        assert_eq!(count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE id = $1 AND sent_at IS NOT NULL", id).await, 1);
    }

    async fn a_mail_survives_an_smtp_outage_with_backoff_and_is_then_delivered_exactly_once(backend: Backend) {
        let bench = bench(backend).await;
        bench.smtp.set_refusing(true);
        let id = bench.enqueue_for("recipient@example.test").await;

        assert_eq!(bench.deliver().await, report(0, 1, 0));
        assert_eq!((bench.status(id).await, bench.attempts(id).await), ("pending".to_owned(), 1));
        assert_eq!(text(&bench.db, "SELECT last_error FROM mail_outbox WHERE id = $1", id).await, "smtp 421");
        let wait = bench.backoff_left(id).await;
        assert!((25.0..=30.5).contains(&wait), "first backoff is 30 s, got {wait}");
        assert_eq!(bench.deliver().await, report(0, 0, 0), "nothing is tried before its backoff ends");

        bench.make_due(id).await;
        assert_eq!(bench.deliver().await, report(0, 1, 0));
        let wait = bench.backoff_left(id).await;
        assert!((55.0..=60.5).contains(&wait), "second backoff is 60 s, got {wait}");
        assert!(bench.body_len(id).await > 0, "a failed mail keeps its message");

        bench.smtp.set_refusing(false);
        bench.make_due(id).await;
        assert_eq!(bench.deliver().await, report(1, 0, 0));
        bench.make_due(id).await;
        assert_eq!(bench.deliver().await, report(0, 0, 0));

        assert_eq!(bench.smtp.messages().len(), 1, "delivered exactly once");
        assert_eq!(bench.status(id).await, "sent");
        assert_eq!(bench.attempts(id).await, 2);
    }

    async fn a_relay_that_is_down_costs_one_attempt_per_pass_not_one_per_mail(backend: Backend) {
        let bench = bench(backend).await;
        bench.smtp.set_refusing(true);
        let first = bench.enqueue_for("a@example.test").await;
        let second = bench.enqueue_for("b@example.test").await;

        assert_eq!(bench.deliver().await, report(0, 1, 0));
        assert_eq!((bench.attempts(first).await, bench.attempts(second).await), (1, 0));
        assert_eq!(bench.status(second).await, "pending");

        bench.smtp.set_refusing(false);
        assert_eq!(bench.deliver().await, report(1, 0, 0), "the untouched mail goes first once the relay is back");
        bench.make_due(first).await;
        assert_eq!(bench.deliver().await, report(1, 0, 0));
        assert_eq!(bench.smtp.messages().len(), 2);
    }

    async fn two_workers_delivering_the_same_due_mails_at_once_send_each_exactly_once(backend: Backend) {
        let bench = bench(backend).await;
        const MAILS: usize = 12;
        for i in 0..MAILS {
            bench.enqueue_for(&format!("r{i}@example.test")).await;
        }
        let barrier = Arc::new(Barrier::new(2));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (outbox, mailer, barrier) = (bench.outbox.clone(), bench.mailer.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    outbox.deliver_due(mailer.as_ref(), 50).await.unwrap()
                })
            })
            .collect();
        let mut sent = 0;
        for worker in workers {
            let report = worker.await.unwrap();
            assert_eq!(report.failed + report.dead, 0);
            sent += report.sent;
        }

        assert_eq!(sent as usize, MAILS);
        let mut recipients: Vec<_> = bench.smtp.messages().into_iter().flat_map(|m| m.to).collect();
        assert_eq!(recipients.len(), MAILS, "{recipients:?}");
        recipients.sort();
        recipients.dedup();
        assert_eq!(recipients.len(), MAILS, "a mail was sent twice");
        assert_eq!(count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE status = 'sent' AND id > $1", 0).await, 12);
    }

    async fn two_workers_claiming_at_once_never_claim_the_same_row(backend: Backend) {
        let bench = bench(backend).await;
        for i in 0..20 {
            bench.enqueue_for(&format!("r{i}@example.test")).await;
        }
        let barrier = Arc::new(Barrier::new(2));
        let claims: Vec<_> = (0..2)
            .map(|_| {
                let (outbox, barrier) = (bench.outbox.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    outbox.claim_due(50).await.unwrap().into_iter().map(|m| m.id).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids = Vec::new();
        for claim in claims {
            ids.extend(claim.await.unwrap());
        }
        ids.sort();
        let claimed = ids.len();
        ids.dedup();
        assert_eq!((claimed, ids.len()), (20, 20), "every row claimed by exactly one worker");
        assert_eq!(count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE status = 'sending' AND id > $1", 0).await, 20);
    }

    async fn a_mail_left_sending_by_a_crashed_worker_is_taken_back_and_delivered(backend: Backend) {
        let bench = bench(backend).await;
        let id = bench.enqueue_for("recipient@example.test").await;
        // A worker claims the row and dies before it sends or records anything.
        assert_eq!(bench.outbox.claim_due(10).await.unwrap().len(), 1);
        assert_eq!(bench.outbox.recover_stuck().await.unwrap(), 0, "a fresh claim is not stuck");
        assert_eq!(bench.deliver().await, report(0, 0, 0), "a claimed row is no one else's");

        execute(
            &bench.db,
            "UPDATE mail_outbox SET claimed_at = unixepoch('subsec') - 11 * 60 WHERE id = $1",
            "UPDATE mail_outbox SET claimed_at = now() - interval '11 minutes' WHERE id = $1",
            id,
        )
        .await;
        assert_eq!(bench.outbox.recover_stuck().await.unwrap(), 1);
        assert_eq!((bench.status(id).await, bench.attempts(id).await), ("pending".to_owned(), 1));
        assert_eq!(text(&bench.db, "SELECT last_error FROM mail_outbox WHERE id = $1", id).await, "interrupted");

        assert_eq!(bench.deliver().await, report(1, 0, 0));
        assert_eq!(bench.smtp.messages().len(), 1);
        assert_eq!(bench.status(id).await, "sent");
    }

    async fn a_mail_is_dead_after_twenty_failed_attempts_with_the_backoff_capped_at_an_hour(backend: Backend) {
        let bench = bench(backend).await;
        bench.smtp.set_refusing(true);
        let id = bench.enqueue_for("recipient@example.test").await;
        for attempt in 1..=20u32 {
            bench.make_due(id).await;
            let expected = if attempt < 20 { report(0, 1, 0) } else { report(0, 0, 1) };
            assert_eq!(bench.deliver().await, expected, "attempt {attempt}");
            if attempt < 20 {
                let backoff = (30.0 * 2f64.powi(attempt as i32 - 1)).min(3600.0);
                let wait = bench.backoff_left(id).await;
                assert!(wait <= backoff + 0.5 && wait >= backoff - 5.0, "attempt {attempt}: {wait} vs {backoff}");
            }
        }
        assert_eq!((bench.status(id).await, bench.attempts(id).await), ("dead".to_owned(), 20));
        assert_eq!(bench.body_len(id).await, 0, "a dead mail keeps no body (and so no link)");

        bench.smtp.set_refusing(false);
        bench.make_due(id).await;
        assert_eq!(bench.deliver().await, report(0, 0, 0), "a dead mail is not tried again");
        assert!(bench.smtp.messages().is_empty());
    }

    async fn the_dashboard_sees_a_shares_mails_and_deleting_the_share_keeps_their_record(backend: Backend) {
        let app = TestApp::spawn(backend).await;
        let share = app.create_share().await;
        let outbox = Outbox::new(app.db().clone(), &app.state.secret_key);
        let id = outbox.enqueue(Some(share.id), MailKind::ShareNotification, &notification("r@example.test")).await.unwrap();

        // The server's own worker delivers it, within its interval.
        app.smtp.wait_for(1, Duration::from_secs(20)).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let state = loop {
            let state = outbox.delivery_state(share.id).await.unwrap();
            if state[0].status == "sent" || tokio::time::Instant::now() > deadline {
                break state;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(state.len(), 1);
        assert_eq!((state[0].id, state[0].kind.as_str(), state[0].status.as_str()), (id, "share_notification", "sent"));
        assert_eq!(state[0].attempts, 0);
        assert!(state[0].sent_at.is_some_and(|sent| sent >= state[0].created_at));

        execute(app.db(), "DELETE FROM shares WHERE id = $1", "DELETE FROM shares WHERE id = $1", share.id).await;
        assert_eq!(count(app.db(), "SELECT count(*) FROM mail_outbox WHERE id = $1 AND share_id IS NULL", id).await, 1);
        assert_eq!(app.smtp.messages().len(), 1);
    }

    async fn a_mail_for_more_than_one_recipient_is_refused_by_the_outbox(backend: Backend) {
        let bench = bench(backend).await;
        let message = lettre::Message::builder()
            .from("watasu@example.test".parse().unwrap())
            .to("a@example.test".parse().unwrap())
            .to("b@example.test".parse().unwrap())
            .subject("two")
            .body(String::from("hello"))
            .unwrap();
        assert!(bench.outbox.enqueue(None, MailKind::DownloadReceipt, &message).await.is_err());
        assert_eq!(count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE id > $1", 0).await, 0);
    }

    async fn share_create_with_the_relay_down_queues_the_mail_prints_the_url_and_exits_0(backend: Backend) {
        let bench = bench(backend).await;
        let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (code, stdout, stderr) = share_create(&bench, &format!("smtp://127.0.0.1:{closed_port}")).await;

        assert_eq!(code, 0, "{stderr}");
        let url = stdout.trim_end().lines().last().unwrap().to_owned();
        assert!(url.contains("/s/"), "the URL is printed last: {stdout}");
        assert!(stderr.contains("queued"), "{stderr}");
        let id = count(&bench.db, "SELECT max(id) FROM mail_outbox WHERE id > $1", 0).await;
        assert_eq!((bench.status(id).await, bench.attempts(id).await), ("pending".to_owned(), 1));
        assert_eq!(text(&bench.db, "SELECT last_error FROM mail_outbox WHERE id = $1", id).await, "connection");
        assert_eq!(count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE id = $1 AND share_id IS NOT NULL", id).await, 1);
        let token = url.rsplit('/').next().unwrap().to_owned();
        assert_row_holds_no_link(&bench.db, id, &url, &token).await;

        // Nothing lost: once a relay answers, the server's delivery sends the very link printed.
        bench.make_due(id).await;
        assert_eq!(bench.deliver().await, report(1, 0, 0));
        let mails = bench.smtp.messages();
        assert_eq!(mails.len(), 1);
        assert!(mails[0].text().contains(&url));
        // …and the link works: its token is the one the share row was issued for.
        let hash = sha256_hex(&token);
        let issued: i64 = match &bench.db {
            Db::Sqlite(pool) => sqlx::query_scalar("SELECT count(*) FROM shares WHERE token_hash = $1 AND status = 'active'").bind(&hash).fetch_one(pool).await.unwrap(),
            Db::Postgres(pool) => sqlx::query_scalar("SELECT count(*) FROM shares WHERE token_hash = $1 AND status = 'active'").bind(&hash).fetch_one(pool).await.unwrap(),
        };
        assert_eq!(issued, 1);
    }

    async fn share_create_with_the_relay_up_mails_the_link_at_once(backend: Backend) {
        let bench = bench(backend).await;
        let (code, stdout, stderr) = share_create(&bench, &bench.smtp.url()).await;

        assert_eq!(code, 0, "{stderr}");
        let url = stdout.trim_end().lines().last().unwrap().to_owned();
        let mails = bench.smtp.wait_for(1, Duration::from_secs(10)).await;
        assert_eq!(mails.len(), 1);
        assert_eq!(mails[0].to, ["recipient@example.test"]);
        assert!(mails[0].text().contains(&url));
        let id = count(&bench.db, "SELECT max(id) FROM mail_outbox WHERE id > $1", 0).await;
        assert_eq!(bench.status(id).await, "sent");
        assert_eq!(bench.body_len(id).await, 0);
        assert_eq!(bench.outbox.deliver_one(bench.mailer(), id).await.unwrap(), None, "a sent mail is not claimed again");
    }
}

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
    let values = match db {
        Db::Sqlite(pool) => columns_as_bytes(&sqlx::query(SQL).bind(id).fetch_one(pool).await.unwrap()),
        Db::Postgres(pool) => columns_as_bytes(&sqlx::query(SQL).bind(id).fetch_one(pool).await.unwrap()),
    };
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
