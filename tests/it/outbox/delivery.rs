//! Delivery by the outbox worker: once, through an outage with backoff, with workers racing, after a crash, dead after twenty attempts, given back at shutdown when the relay hangs, and given up at its deadline when the relay hangs while serving.

use super::*;
use crate::support::Backend;

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

    clock::set_ago(&bench.db, "mail_outbox", &["claimed_at"], 11 * 60, &clock::id(id)).await;
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

async fn sigterm_with_a_hung_relay_exits_within_the_grace_and_the_mail_is_sent_on_the_next_start(backend: Backend) {
    let bench = bench(backend).await;
    // A relay that takes the connection (the kernel completes it) and never says a word.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_url = format!("smtp://127.0.0.1:{}", hung.local_addr().unwrap().port());
    let id = bench.enqueue_for("recipient@example.test").await;
    let serve = |smtp_url: &str| {
        let args = ["--database-url", &bench.url, "--smtp-url", smtp_url, "--shutdown-grace", "2s"];
        tokio::task::block_in_place(|| Server::start(bench.dir.path(), &args))
    };
    let mut server = serve(&hung_url);
    // The worker's first pass claims the mail at once and waits for the relay's greeting.
    eventually(Duration::from_secs(10), "the worker claiming the mail", async || bench.status(id).await == "sending")
        .await;

    let signalled = std::time::Instant::now();
    server.signal("TERM");
    let code = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(20)));
    let took = signalled.elapsed();

    assert_eq!(code, Some(0), "{}", server.log());
    // The relay's own timeout is 15 s; the grace is 2 s.
    assert!(took < Duration::from_secs(5), "the shutdown took {took:?}:\n{}", server.log());
    assert_eq!((bench.status(id).await, bench.attempts(id).await), ("pending".to_owned(), 0));
    assert!(bench.smtp.messages().is_empty());

    let _next = serve(&bench.smtp.url());
    let mails = bench.smtp.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(mails[0].to, ["recipient@example.test"]);
    eventually(Duration::from_secs(10), "the row marked sent", async || bench.status(id).await == "sent").await;
    drop(hung);
}

async fn a_send_to_a_hung_relay_ends_at_its_deadline_and_the_worker_goes_on_retrying_and_taking_back(backend: Backend) {
    let bench = bench(backend).await;
    // A relay that takes the connection (the kernel completes it) and never says a word.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_url = format!("smtp://127.0.0.1:{}", hung.local_addr().unwrap().port());
    let first = bench.enqueue_for("first@example.test").await;
    let args = ["--database-url", &bench.url, "--smtp-url", &hung_url, "--smtp-timeout", "1s"];
    let server = tokio::task::block_in_place(|| Server::start(bench.dir.path(), &args));

    // The worker's first send is given up at its deadline and counted as a failed attempt.
    eventually(Duration::from_secs(30), "the hung send to be given up", async || bench.attempts(first).await == 1)
        .await;
    assert_eq!(bench.status(first).await, "pending");
    assert_eq!(text(&bench.db, "SELECT last_error FROM mail_outbox WHERE id = $1", first).await, "timeout");
    // The warning follows the attempt's row, and reaches the log through the process's pipe.
    eventually(Duration::from_secs(30), "the retry warning in the log", async || {
        server.log().contains("outbox mail not delivered; will retry")
    })
    .await;

    // The same worker keeps running: it tries the mail again once due, and takes back a row
    // another (crashed) worker left in 'sending'.
    let stuck = bench.enqueue_for("stuck@example.test").await;
    assert_eq!(bench.outbox.claim(stuck).await.unwrap().map(|m| m.id), Some(stuck));
    clock::set_ago(&bench.db, "mail_outbox", &["claimed_at"], 11 * 60, &clock::id(stuck)).await;
    bench.make_due(first).await;
    eventually(Duration::from_secs(60), "a second attempt and the stuck row taken back", async || {
        bench.attempts(first).await == 2 && bench.attempts(stuck).await >= 1
    })
    .await;
    assert_ne!(bench.status(stuck).await, "sending");
    assert!(bench.smtp.messages().is_empty());
    drop(server);
    drop(hung);
}

both_backends!(
    a_queued_mail_is_delivered_once_and_its_stored_body_is_cleared,
    a_mail_survives_an_smtp_outage_with_backoff_and_is_then_delivered_exactly_once,
    a_relay_that_is_down_costs_one_attempt_per_pass_not_one_per_mail,
    two_workers_delivering_the_same_due_mails_at_once_send_each_exactly_once,
    two_workers_claiming_at_once_never_claim_the_same_row,
    a_mail_left_sending_by_a_crashed_worker_is_taken_back_and_delivered,
    a_mail_is_dead_after_twenty_failed_attempts_with_the_backoff_capped_at_an_hour,
    sigterm_with_a_hung_relay_exits_within_the_grace_and_the_mail_is_sent_on_the_next_start,
    a_send_to_a_hung_relay_ends_at_its_deadline_and_the_worker_goes_on_retrying_and_taking_back
);
