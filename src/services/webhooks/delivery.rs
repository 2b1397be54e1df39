//! Webhook delivery, endpoint by endpoint: a pass starts one lane per endpoint with a message due,
//! and a lane sends that endpoint's due messages one after the other, oldest due first, in a slot
//! of its own ([`DELIVERY_SLOTS`] of them per instance). An endpoint that hangs until the
//! deadline therefore holds only its own lane: the others are delivered beside it, and the worker
//! starts the next pass without waiting for it. An endpoint whose attempt is in flight, here or
//! in another instance (a message of it in 'sending'), gets no second lane; a message left in
//! 'sending' by a process that stopped is taken back after [`RECLAIM_AFTER`], by the database's
//! clock. No lock is held across the network: a message is sent by whoever claims it (one
//! conditional UPDATE), so any number of instances may run the worker at once.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use rand::RngExt;
use tokio::sync::{Semaphore, SemaphorePermit};
use url::Url;

use super::{Fault, Webhooks};
use crate::{
    retry,
    webhooks::{
        outbox::{ClaimedMessage, Failure, MessageStatus, RECLAIM_AFTER},
        send::{self, ATTEMPT_DEADLINE},
    },
};

/// The first retry waits about this long; each failure doubles it…
const RETRY_BASE: Duration = Duration::from_secs(30);
/// …up to this.
const RETRY_CAP: Duration = Duration::from_secs(6 * 3600);
/// A message still failing this long after it was made is given up ('dead').
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);
/// Endpoints one pass starts lanes for at most.
const ENDPOINTS_PER_PASS: i64 = 100;
/// Messages one lane sends at most before it gives its slot back.
const LANE_BATCH: i64 = 20;
/// Endpoints one instance sends to at once.
pub const DELIVERY_SLOTS: usize = 16;
/// How often the worker dispatches and starts a delivery pass.
pub const WORKER_INTERVAL: Duration = Duration::from_secs(5);

/// What one delivery pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub delivered: u32,
    pub retrying: u32,
    pub dead: u32,
    pub dropped: u32,
}

/// What became of one due message, as the metrics name it.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    Delivered,
    Retrying,
    Dead,
    Dropped,
}

impl Outcome {
    fn code(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Retrying => "retrying",
            Self::Dead => "dead",
            Self::Dropped => "dropped",
        }
    }
}

impl DeliveryReport {
    fn count(&mut self, outcome: Outcome) {
        *match outcome {
            Outcome::Delivered => &mut self.delivered,
            Outcome::Retrying => &mut self.retrying,
            Outcome::Dead => &mut self.dead,
            Outcome::Dropped => &mut self.dropped,
        } += 1;
    }
}

/// This instance's lanes: the endpoints it is sending to, and the slots they take.
#[derive(Clone, Debug)]
pub(super) struct Lanes {
    busy: Arc<Mutex<HashSet<i64>>>,
    slots: Arc<Semaphore>,
}

impl Default for Lanes {
    fn default() -> Self {
        Self { busy: Arc::default(), slots: Arc::new(Semaphore::new(DELIVERY_SLOTS)) }
    }
}

impl Lanes {
    /// The endpoint's lane, unless this instance runs one for it already.
    fn open(&self, endpoint_id: i64) -> Option<Lane> {
        let fresh = self.busy.lock().expect("not poisoned").insert(endpoint_id);
        fresh.then(|| Lane { endpoint_id, busy: self.busy.clone() })
    }

    async fn slot(&self) -> SemaphorePermit<'_> {
        self.slots.acquire().await.expect("the semaphore is never closed")
    }
}

/// One endpoint's turn; the endpoint is free for another lane when it is dropped, also when its
/// pass is cut short.
struct Lane {
    endpoint_id: i64,
    busy: Arc<Mutex<HashSet<i64>>>,
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.busy.lock().expect("not poisoned").remove(&self.endpoint_id);
    }
}

impl Webhooks {
    /// One delivery pass: takes back messages abandoned mid-send, then runs a lane for every
    /// endpoint with a message due (but none in flight) and answers when they have ended. A 2xx
    /// is delivered, anything else waits for its backoff, and a message failing for
    /// [`GIVE_UP_AFTER`] is given up. A message of a sender disabled or being deleted, or of a
    /// disabled endpoint, is dropped unsent.
    pub async fn deliver_due(&self) -> Result<DeliveryReport, Fault> {
        let recovered = self.messages.recover_stuck().await?;
        if recovered > 0 {
            tracing::warn!(
                recovered,
                after_secs = RECLAIM_AFTER.as_secs(),
                "took back webhook messages abandoned mid-send"
            );
        }
        let endpoints = self.messages.due_endpoints(ENDPOINTS_PER_PASS).await?;
        let lanes = endpoints.into_iter().filter_map(|id| self.lanes.open(id)).map(|lane| self.run_lane(lane));
        // A fault in one lane does not stop the others mid-send (they would sit in 'sending'
        // until taken back, and go out twice): every one runs to its end, then the first fault
        // is the pass's.
        let mut report = DeliveryReport::default();
        let mut fault = None;
        for (outcomes, lane_fault) in futures_util::future::join_all(lanes).await {
            outcomes.into_iter().for_each(|outcome| report.count(outcome));
            if let Some(error) = lane_fault {
                fault.get_or_insert(error);
            }
        }
        fault.map_or(Ok(report), Err)
    }

    /// One endpoint's due messages, one at a time. It ends at the first that fails: the endpoint
    /// is failing, and its other messages wait for the next pass rather than hold the slot.
    async fn run_lane(&self, lane: Lane) -> (Vec<Outcome>, Option<Fault>) {
        let _slot = self.lanes.slot().await;
        let mut outcomes = Vec::new();
        let ids = match self.messages.due_of_endpoint(lane.endpoint_id, LANE_BATCH).await {
            Ok(ids) => ids,
            Err(error) => return (outcomes, Some(error.into())),
        };
        for id in ids {
            let outcome = match self.deliver_one(id).await {
                Ok(Some(outcome)) => outcome,
                Ok(None) => continue,
                Err(fault) => return (outcomes, Some(fault)),
            };
            self.metrics.webhook_delivery(outcome.code());
            outcomes.push(outcome);
            match outcome {
                Outcome::Delivered | Outcome::Dropped => {}
                Outcome::Retrying | Outcome::Dead => break,
            }
        }
        (outcomes, None)
    }

    /// Drops or claims and sends one due message; `None` when another worker has it.
    async fn deliver_one(&self, id: i64) -> Result<Option<Outcome>, Fault> {
        if self.messages.drop_unsendable(id).await? {
            return Ok(Some(Outcome::Dropped));
        }
        let Some(message) = self.messages.claim(id).await? else { return Ok(None) };
        let attempt = tokio::time::timeout(ATTEMPT_DEADLINE, self.attempt(&message)).await;
        let outcome = match attempt.unwrap_or_else(|_| Err(past_deadline())) {
            Ok(status) => {
                self.messages.mark_delivered(message.id, status).await?;
                Outcome::Delivered
            }
            Err(failure) => {
                let wait = jittered(retry::backoff(RETRY_BASE, message.attempts.unsigned_abs(), RETRY_CAP));
                match self.messages.mark_failed(message.id, &failure, wait, GIVE_UP_AFTER).await? {
                    Some(MessageStatus::Dead) => Outcome::Dead,
                    _ => Outcome::Retrying,
                }
            }
        };
        Ok(Some(outcome))
    }

    /// One attempt: the endpoint's address checked again now, then the signed POST to it.
    async fn attempt(&self, message: &ClaimedMessage) -> Result<u16, Failure> {
        let failure = |error: String| Failure { status: None, error };
        let signing = self.repo.signing(message.endpoint_id).await.map_err(|_| failure("database".to_owned()))?;
        let signing = signing.ok_or_else(|| failure("endpoint secret unreadable".to_owned()))?;
        let url = Url::parse(&signing.url).map_err(|_| failure("not a web address".to_owned()))?;
        let target = self.guard.resolve(&url).await.map_err(|refusal| failure(format!("refused: {refusal}")))?;
        send::post(&target, &message.message_id, &message.body, &signing.secrets).await
    }

    /// A pass as the worker runs it: its report or fault goes to the log.
    async fn logged_pass(self) {
        match self.deliver_due().await {
            Ok(report) if report != DeliveryReport::default() => tracing::info!(?report, "webhook delivery pass"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "webhook delivery pass failed"),
        }
    }
}

/// An attempt cut at [`ATTEMPT_DEADLINE`].
fn past_deadline() -> Failure {
    Failure { status: None, error: format!("no result within {} s", ATTEMPT_DEADLINE.as_secs()) }
}

/// Half the wait plus a random part of the other half, so that receivers that failed together are
/// not retried together.
fn jittered(wait: Duration) -> Duration {
    wait.mul_f64(rand::rng().random_range(0.5..=1.0))
}

/// Dispatches and starts a delivery pass every `interval` (and once at start) until `shutdown`
/// resolves. A pass is not waited for: the next one starts lanes for the endpoints the earlier
/// ones are not sending to. At shutdown the passes under way get `grace` to end; an attempt still
/// running then is dropped, and its message taken back after [`RECLAIM_AFTER`].
pub async fn run_webhook_worker(
    webhooks: Webhooks,
    interval: Duration,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    let mut passes = tokio::task::JoinSet::new();
    loop {
        if let Err(error) = webhooks.dispatch().await {
            tracing::warn!(%error, "webhook dispatch failed");
        }
        while passes.try_join_next().is_some() {}
        passes.spawn(webhooks.clone().logged_pass());
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(interval) => {}
        }
    }
    let ended = tokio::time::timeout(grace, async { while passes.join_next().await.is_some() {} }).await;
    if ended.is_err() {
        tracing::info!(
            reclaim_after_secs = RECLAIM_AFTER.as_secs(),
            "webhook attempts still running at shutdown were dropped; their messages are taken back"
        );
        passes.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jitter_keeps_at_least_half_the_wait_and_never_more() {
        for _ in 0..100 {
            let wait = jittered(RETRY_CAP);
            assert!(wait >= RETRY_CAP / 2 && wait <= RETRY_CAP, "{wait:?}");
        }
    }

    #[test]
    fn an_endpoint_has_one_lane_at_a_time_in_an_instance() {
        let lanes = Lanes::default();
        let first = lanes.open(7).expect("a free endpoint");
        assert!(lanes.open(7).is_none(), "a second lane for a busy endpoint");
        assert!(lanes.open(8).is_some(), "another endpoint is not held up");
        drop(first);
        assert!(lanes.open(7).is_some(), "the endpoint is free again once its lane ended");
    }
}
