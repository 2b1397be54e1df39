//! A relay that takes connections and never answers, and one whose accept queue is full: every
//! code mail still ends within its deadline (WATASU_SMTP_TIMEOUT, one second here) and its quick
//! retries, as a failure on the sender's timeline, in the log and in the metrics, exactly as a
//! refused one; every connection the relay took is closed again; and the outbox worker gives a
//! hung send up and goes on retrying and taking back stuck rows.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::io::AsyncReadExt;
use watasu::secret::SecretString;

use super::{METRICS_TOKEN, event_kinds, eventually, metric};
use crate::{
    both_backends,
    support::{Backend, TestApp, TestShare},
};

/// The deadline of one send in these drills.
const SEND_TIMEOUT: Duration = Duration::from_secs(1);
/// One attempt and three quick retries (1, 3 and 8 s apart), each cut at the deadline, with room
/// for a busy machine.
const CODE_MAIL_GIVEN_UP_WITHIN: Duration = Duration::from_secs(90);

/// A relay that completes every connection and then says nothing, not even its greeting. It
/// counts the connections it took and those the client closed.
struct SilentRelay {
    port: u16,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl SilentRelay {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (accepted, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (counted, ended) = (accepted.clone(), closed.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let ended = ended.clone();
                tokio::spawn(async move {
                    let mut buffer = [0u8; 512];
                    // The client speaks only after a greeting that never comes: a read ends when
                    // it closes the connection.
                    while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
                    ended.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Self { port, accepted, closed, task }
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }
}

impl Drop for SilentRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A relay whose listen queue holds one connection and which never accepts: once the queue is
/// full the kernel drops further handshakes, and a client's connect just waits.
struct FullQueueRelay {
    _listener: tokio::net::TcpListener,
    port: u16,
}

impl FullQueueRelay {
    fn start() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1).unwrap();
        let port = listener.local_addr().unwrap().port();
        Self { _listener: listener, port }
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }
}

async fn app_mailing_to(backend: Backend, smtp_url: String) -> TestApp {
    TestApp::spawn_with(backend, |s| {
        s.smtp_url = Some(SecretString::new(smtp_url));
        s.smtp_timeout = SEND_TIMEOUT;
        s.metrics_token = Some(SecretString::new(METRICS_TOKEN));
    })
    .await
}

/// `count` shares, each to its own recipient, and a code asked for each from a new browser.
async fn ask_codes(app: &TestApp, count: usize) -> Vec<TestShare> {
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let mut shares = Vec::new();
    for i in 0..count {
        let recipient = format!("r{i}@example.test");
        let share =
            app.fake_share().sender(sender).recipient(&recipient).file("report.txt", b"the report\n").create().await;
        let browser = app.browser();
        let landing = browser.get(&format!("/s/{}", share.token)).await;
        assert_eq!(landing.status, 200, "{}", landing.body);
        let answer = browser
            .post_form(
                &format!("/s/{}/email", share.token),
                &[("csrf_token", &landing.csrf_token()), ("email", &recipient)],
            )
            .await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        shares.push(share);
    }
    shares
}

/// Waits until every share's code mail has ended, and checks that each ended as a failure.
async fn every_code_mail_failed(app: &TestApp, shares: &[TestShare]) {
    for share in shares {
        eventually(CODE_MAIL_GIVEN_UP_WITHIN, "the code mail to end", async || {
            event_kinds(app.db(), share.id).await.iter().any(|k| k == "code_mail_failed" || k == "code_sent")
        })
        .await;
        let kinds = event_kinds(app.db(), share.id).await;
        assert!(kinds.contains(&"code_mail_failed".to_owned()), "{kinds:?}");
        assert!(!kinds.contains(&"code_sent".to_owned()), "{kinds:?}");
    }
    let failed = metric(app, "watasu_code_mails_total", &[("result", "failed")]).await;
    assert_eq!(failed, Some(shares.len() as f64), "the failed code mails are counted");
}

async fn a_relay_that_accepts_and_never_answers_fails_each_code_mail_at_its_deadline_and_frees_its_sockets(
    backend: Backend,
) {
    let relay = SilentRelay::start().await;
    let app = app_mailing_to(backend, relay.url()).await;

    let shares = ask_codes(&app, 3).await;

    every_code_mail_failed(&app, &shares).await;
    // One connection per attempt, none kept for later: each hung one was closed at its deadline.
    assert_eq!(relay.accepted.load(Ordering::SeqCst), 4 * shares.len());
    eventually(Duration::from_secs(10), "every connection the relay took to be closed", async || {
        relay.closed.load(Ordering::SeqCst) == relay.accepted.load(Ordering::SeqCst)
    })
    .await;
    app.stop().await;
}

async fn a_relay_whose_accept_queue_is_full_fails_every_code_mail_at_its_deadline(backend: Backend) {
    let relay = FullQueueRelay::start();
    let app = app_mailing_to(backend, relay.url()).await;

    let shares = ask_codes(&app, 12).await;

    every_code_mail_failed(&app, &shares).await;
    app.stop().await;
}

both_backends!(
    a_relay_that_accepts_and_never_answers_fails_each_code_mail_at_its_deadline_and_frees_its_sockets,
    a_relay_whose_accept_queue_is_full_fails_every_code_mail_at_its_deadline
);
