//! Delivery goes endpoint by endpoint: a receiver that accepts the connection and never answers
//! holds only its own messages while a healthy endpoint's arrive beside it, and a message left in
//! 'sending' by a process that stopped mid-attempt is sent again once the attempt's own bound has
//! passed (moved through the database's clock), not before.

use std::time::{Duration, Instant};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use watasu::{
    db::{Dialect, Sql},
    on_db,
    services::webhooks::Reach,
    sql,
    webhooks::{EventType, outbox::RECLAIM_AFTER},
};

use super::{app_allowing_loopback, receiver::Receiver, settle, user};
use crate::{
    both_backends,
    support::{Backend, TestApp, count},
};

/// A receiver that accepts every connection and never reads or answers it; dropping it closes
/// them, so that an attempt hanging on it fails at once instead of at the timeout.
struct HungReceiver {
    port: u16,
    accepted: watch::Receiver<usize>,
    task: JoinHandle<()>,
}

impl HungReceiver {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tell, accepted) = watch::channel(0);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
                tell.send_replace(held.len());
            }
        });
        Self { port, accepted, task }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// Waits until an attempt has connected to it.
    async fn connected(&mut self) {
        tokio::time::timeout(Duration::from_secs(30), self.accepted.wait_for(|n| *n > 0))
            .await
            .expect("no attempt ever reached the hung receiver")
            .unwrap();
    }
}

impl Drop for HungReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const OF_ENDPOINT_IN: &str = "SELECT count(*) FROM webhook_messages WHERE endpoint_id = $1 AND status = 'sending'";
const TRIED_OF_ENDPOINT: &str = "SELECT count(*) FROM webhook_messages WHERE endpoint_id = $1 AND attempts > 0";

async fn a_hung_endpoint_holds_only_its_own_messages_while_a_healthy_endpoints_arrive(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let healthy = Receiver::start(0).await;
    let mut hung = HungReceiver::start().await;
    let sender_id = app.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&app, sender_id).await;
    let webhooks = &app.state.services.webhooks;
    let types = [EventType::ShareOpened];
    let stuck = webhooks.register(&sender, &hung.url(), &types, Reach::Own).await.unwrap().unwrap();
    let answering = webhooks.register(&sender, &healthy.url(), &types, Reach::Own).await.unwrap().unwrap();
    healthy.accept(&[answering.secret.expose()]);
    // More of the hung endpoint's messages than a pass once sent at a time, and due first.
    for _ in 0..10 {
        assert!(webhooks.send_test(&sender, stuck.endpoint_id).await.unwrap());
    }
    for _ in 0..3 {
        assert!(webhooks.send_test(&sender, answering.endpoint_id).await.unwrap());
    }

    let pass = tokio::spawn({
        let webhooks = webhooks.clone();
        async move { webhooks.deliver_due().await.unwrap() }
    });
    hung.connected().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while healthy.received().len() < 3 {
        assert!(Instant::now() < deadline, "the healthy endpoint's messages never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The healthy endpoint got all of its messages while the hung one's first attempt still hangs,
    // and none of the hung endpoint's other messages was tried beside it.
    assert_eq!(count(app.db(), OF_ENDPOINT_IN, stuck.endpoint_id).await, 1);
    assert_eq!(count(app.db(), TRIED_OF_ENDPOINT, stuck.endpoint_id).await, 0);
    assert!(healthy.received().iter().all(|r| r.status == 200 && r.body["type"] == "webhook.test"));

    drop(hung);
    pass.await.unwrap();
}

/// Puts a pending message in 'sending', claimed `ago` seconds before now, as a process that
/// stopped mid-attempt leaves it; false when a worker took it first.
async fn leave_sending(app: &TestApp, id: i64, ago: Duration) -> bool {
    const CRASHED: Sql = sql!(
        "UPDATE webhook_messages SET status = 'sending', claimed_at = " now " - " secs("$2") "
          WHERE id = $1 AND status = 'pending'"
    );
    let ago = watasu::db::seconds(ago);
    let done = on_db!(app.db(), |pool| {
        sqlx::query(pool.sql(&CRASHED)).bind(id).bind(ago).execute(pool).await.unwrap().rows_affected()
    });
    done == 1
}

/// Moves the claim of a message in 'sending' to `ago` seconds before now.
async fn claimed_ago(app: &TestApp, id: i64, ago: Duration) {
    const CLAIMED: Sql = sql!(
        "UPDATE webhook_messages SET claimed_at = " now " - " secs("$2") " WHERE id = $1 AND status = 'sending'"
    );
    let ago = watasu::db::seconds(ago);
    let done = on_db!(app.db(), |pool| {
        sqlx::query(pool.sql(&CLAIMED)).bind(id).bind(ago).execute(pool).await.unwrap().rows_affected()
    });
    assert_eq!(done, 1, "the message is still in 'sending'");
}

async fn a_message_left_sending_by_a_crash_goes_out_again_after_the_attempts_bound_and_not_before(backend: Backend) {
    let app = app_allowing_loopback(backend).await;
    let receiver = Receiver::start(0).await;
    let sender_id = app.create_sender("sato@example.test", "Sender Sato").await;
    let sender = user(&app, sender_id).await;
    let webhooks = &app.state.services.webhooks;
    let endpoint = webhooks.register(&sender, &receiver.url(), &[EventType::ShareOpened], Reach::Own).await;
    let endpoint = endpoint.unwrap().unwrap();
    receiver.accept(&[endpoint.secret.expose()]);
    let newest = "SELECT max(id) FROM webhook_messages WHERE endpoint_id = $1";
    // The app's own worker may send a fresh message before it is put in 'sending': then another.
    let (id, message_id) = loop {
        assert!(webhooks.send_test(&sender, endpoint.endpoint_id).await.unwrap());
        let id = count(app.db(), newest, endpoint.endpoint_id).await;
        if leave_sending(&app, id, RECLAIM_AFTER - Duration::from_secs(10)).await {
            let message_id =
                webhooks.endpoint(&sender, endpoint.endpoint_id).await.unwrap().unwrap().log[0].message_id.clone();
            break (id, message_id);
        }
    };
    let sent = |receiver: &Receiver| receiver.received().iter().filter(|r| r.id == message_id).count();

    // Within the bound the attempt may still be running somewhere: a pass leaves it alone.
    webhooks.deliver_due().await.unwrap();
    let in_flight = "SELECT count(*) FROM webhook_messages WHERE id = $1 AND status = 'sending' AND attempts = 0";
    assert_eq!(count(app.db(), in_flight, id).await, 1);
    assert_eq!(sent(&receiver), 0);

    // Past it, no attempt can still be running: the message is taken back and sent, same id.
    claimed_ago(&app, id, RECLAIM_AFTER + Duration::from_secs(1)).await;
    settle(&app).await;
    let delivered = "SELECT count(*) FROM webhook_messages WHERE id = $1 AND status = 'delivered' AND attempts = 1";
    assert_eq!(count(app.db(), delivered, id).await, 1);
    assert_eq!(sent(&receiver), 1);
}

both_backends!(
    a_hung_endpoint_holds_only_its_own_messages_while_a_healthy_endpoints_arrive,
    a_message_left_sending_by_a_crash_goes_out_again_after_the_attempts_bound_and_not_before,
);
