//! The outbox seen from shares: the dashboard's record, one recipient per mail, and `watasu share create` with the relay down or up.

use super::*;
use crate::support::Backend;
use watasu::db::Sql;
use watasu::on_db;

async fn the_dashboard_sees_a_shares_mails_and_deleting_the_share_keeps_their_record(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let outbox = Outbox::new(app.db().clone(), &app.state.secret_key);
    let id =
        outbox.enqueue(Some(share.id), MailKind::ShareNotification, &notification("r@example.test")).await.unwrap();

    // The server's own worker delivers it, within its interval.
    app.smtp.wait_for(1, Duration::from_secs(20)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let state = loop {
        let state = outbox.delivery_state(share.id).await.unwrap();
        if state[0].status.code() == "sent" || tokio::time::Instant::now() > deadline {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(state.len(), 1);
    assert_eq!((state[0].id, state[0].kind.code(), state[0].status.code()), (id, "share_notification", "sent"));
    assert_eq!(state[0].attempts, 0);
    assert!(state[0].sent_at.is_some_and(|sent| sent >= state[0].created_at));

    execute(app.db(), Sql::same("DELETE FROM shares WHERE id = $1"), share.id).await;
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
    assert_eq!(
        count(&bench.db, "SELECT count(*) FROM mail_outbox WHERE id = $1 AND share_id IS NOT NULL", id).await,
        1
    );
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
    let issued: i64 = on_db!(&bench.db, |pool| {
        sqlx::query_scalar("SELECT count(*) FROM shares WHERE token_hash = $1 AND status = 'active'")
            .bind(&hash)
            .fetch_one(pool)
            .await
            .unwrap()
    });
    assert_eq!(issued, 1);
}

async fn a_queued_notification_whose_share_was_revoked_meanwhile_is_dropped_not_sent(backend: Backend) {
    let bench = bench(backend).await;
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (code, stdout, stderr) = share_create(&bench, &format!("smtp://127.0.0.1:{closed_port}")).await;
    assert_eq!(code, 0, "{stderr}");
    let url = stdout.trim_end().lines().last().unwrap().to_owned();
    let id = count(&bench.db, "SELECT max(id) FROM mail_outbox WHERE id > $1", 0).await;
    assert_eq!(bench.status(id).await, "pending");

    share_revoke(&bench, &url).await;
    bench.make_due(id).await;
    let delivered = bench.deliver().await;

    assert_eq!(delivered, DeliveryReport { dropped: 1, ..DeliveryReport::default() });
    assert!(bench.smtp.messages().is_empty(), "nothing reached the relay");
    assert_eq!((bench.status(id).await, bench.attempts(id).await), ("dropped".to_owned(), 1));
    assert_eq!(bench.body_len(id).await, 0, "the dead link is not kept either");
    assert_eq!(bench.deliver().await, report(0, 0, 0), "a dropped mail is not tried again");
}

async fn a_download_receipt_about_a_share_that_has_ended_is_still_delivered(backend: Backend) {
    let bench = bench(backend).await;
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (code, stdout, stderr) = share_create(&bench, &format!("smtp://127.0.0.1:{closed_port}")).await;
    assert_eq!(code, 0, "{stderr}");
    share_revoke(&bench, stdout.trim_end().lines().last().unwrap()).await;
    let share_id = count(&bench.db, "SELECT max(id) FROM shares WHERE id > $1", 0).await;

    let receipt = notification("sender@example.test");
    let id = bench.outbox.enqueue(Some(share_id), MailKind::DownloadReceipt, &receipt).await.unwrap();

    assert_eq!(bench.outbox.deliver_one(bench.mailer(), id).await.unwrap(), Some(watasu::mail::outbox::Outcome::Sent));
    assert_eq!(bench.smtp.messages().len(), 1);
    assert_eq!(bench.status(id).await, "sent");
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

both_backends!(
    the_dashboard_sees_a_shares_mails_and_deleting_the_share_keeps_their_record,
    a_mail_for_more_than_one_recipient_is_refused_by_the_outbox,
    share_create_with_the_relay_down_queues_the_mail_prints_the_url_and_exits_0,
    a_queued_notification_whose_share_was_revoked_meanwhile_is_dropped_not_sent,
    a_download_receipt_about_a_share_that_has_ended_is_still_delivered,
    share_create_with_the_relay_up_mails_the_link_at_once
);
