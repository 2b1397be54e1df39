//! Webhooks' use cases: an admin registers endpoints that hear about every share of the team, a
//! sender endpoints for their own shares; each is shown its secret once, may rotate it (the old
//! one still signs for [`ROTATION_OVERLAP`]), send a test event, be disabled or deleted, and shows
//! its delivery log. In the background, [`Webhooks::dispatch`] turns the committed share timeline
//! and new shares into messages and [`Webhooks::deliver_due`] sends them, at least once, with
//! capped backoff and jitter.
//!
//! Messages are made by one dispatcher that follows `share_events` (and `shares`, for
//! `share.created`) by id, rather than by each place that records an event: it reads committed
//! rows only, in one place. A message is unique per endpoint and source (`ON CONFLICT DO
//! NOTHING`), so instances that read the same rows store it once; the cursor only moves forward.
//! Each pass reads [`LOOKBACK`] ids behind the cursor again, because PostgreSQL hands out ids
//! before the transaction commits: an event whose transaction committed after a later one is
//! still seen.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures_util::{StreamExt, stream};
use rand::RngExt;
use url::Url;

use super::{Fault, Parts};
use crate::{
    accounts::User,
    metrics::Metrics,
    retry,
    webhooks::{
        EventType,
        guard::{AddressGuard, Refusal},
        outbox::{ClaimedMessage, Failure, LogEntry, MessageStatus, Messages},
        payload::{self, ShareFacts},
        repo::{Candidate, Endpoint, Source, WebhookRepo},
        send,
        signing::WebhookSecret,
    },
};

/// How long the secret before a rotation still signs, beside the new one.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// The first retry waits about this long; each failure doubles it…
const RETRY_BASE: Duration = Duration::from_secs(30);
/// …up to this.
const RETRY_CAP: Duration = Duration::from_secs(6 * 3600);
/// A message still failing this long after it was made is given up ('dead').
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);
/// A message in 'sending' longer than this was left by a crashed worker (far beyond one attempt).
const STUCK_AFTER: Duration = Duration::from_secs(10 * 60);
/// Ids read again behind the dispatcher's cursor (see the module's comment). The webhook
/// messages' retention sweep leaves the messages of these ids alone.
pub(crate) const LOOKBACK: i64 = 200;
/// New ids one dispatch pass reads at most per source.
const DISPATCH_BATCH: i64 = 300;
/// Messages one delivery pass sends at most.
const DELIVERY_BATCH: i64 = 20;
/// Messages one delivery pass sends at once.
const DELIVERY_CONCURRENCY: usize = 8;
/// How often the worker dispatches and delivers.
pub const WORKER_INTERVAL: Duration = Duration::from_secs(5);
/// Entries of an endpoint's delivery log on its page.
pub const LOG_LENGTH: i64 = 50;
/// The longest URL an endpoint may have.
const URL_LIMIT: usize = 2000;

/// Whose shares an endpoint hears about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Its owner's.
    Own,
    /// Every share of the team: an admin's endpoint.
    Team,
}

/// Why an endpoint was not registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EndpointRefusal {
    #[error("not a web address")]
    NotAUrl,
    #[error(transparent)]
    Address(#[from] Refusal),
    #[error("no event chosen")]
    NoEvents,
    #[error("only an admin registers endpoints for the team")]
    NotAdmin,
}

/// A new endpoint, with its secret to show once.
#[derive(Debug)]
pub struct Registered {
    pub endpoint_id: i64,
    pub secret: WebhookSecret,
}

/// One endpoint's page: the endpoint and its latest messages.
#[derive(Debug)]
pub struct EndpointPage {
    pub endpoint: Endpoint,
    pub log: Vec<LogEntry>,
}

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

/// The ids of each source this instance has made messages of, within the lookback: a pass reads
/// the lookback again for rows committed late, but only a row not read before costs its files'
/// query and an insert per endpoint. (Instances do not share it: each makes a row's messages at
/// most once, and the unique source key keeps one.)
#[derive(Clone, Debug, Default)]
struct Made(Arc<Mutex<HashMap<Source, BTreeSet<i64>>>>);

impl Made {
    fn contains(&self, source: Source, id: i64) -> bool {
        self.0.lock().expect("not poisoned").get(&source).is_some_and(|ids| ids.contains(&id))
    }

    fn insert(&self, source: Source, id: i64) {
        self.0.lock().expect("not poisoned").entry(source).or_default().insert(id);
    }

    /// Forgets the ids no pass reads again.
    fn forget_before(&self, source: Source, id: i64) {
        if let Some(ids) = self.0.lock().expect("not poisoned").get_mut(&source) {
            *ids = ids.split_off(&id);
        }
    }
}

#[derive(Clone, Debug)]
pub struct Webhooks {
    repo: WebhookRepo,
    made: Made,
    messages: Messages,
    guard: AddressGuard,
    metrics: Metrics,
}

impl Webhooks {
    pub fn new(parts: &Parts) -> Self {
        Self {
            repo: WebhookRepo::new(parts.db.clone(), &parts.secret_key),
            made: Made::default(),
            messages: Messages::new(parts.db.clone()),
            guard: AddressGuard::new(parts.config.settings.webhook_allow_networks.clone()),
            metrics: parts.metrics.clone(),
        }
    }

    /// Registers an endpoint of `actor`'s after checking its address: a host that resolves now
    /// must resolve only to addresses the guard lets through (one that does not resolve yet is
    /// checked at each delivery; plain http needs an allowed network, so it must resolve).
    pub async fn register(
        &self,
        actor: &User,
        url: &str,
        types: &[EventType],
        reach: Reach,
    ) -> Result<Result<Registered, EndpointRefusal>, Fault> {
        if reach == Reach::Team && !actor.is_admin() {
            return Ok(Err(EndpointRefusal::NotAdmin));
        }
        let types: Vec<EventType> = EventType::CHOOSABLE.into_iter().filter(|t| types.contains(t)).collect();
        if types.is_empty() {
            return Ok(Err(EndpointRefusal::NoEvents));
        }
        let url = match parse_url(url) {
            Ok(url) => url,
            Err(refusal) => return Ok(Err(refusal)),
        };
        match self.guard.resolve(&url).await {
            Ok(_) => {}
            Err(Refusal::Unresolved | Refusal::LookupTimedOut) if url.scheme() == "https" => {}
            Err(refusal) => return Ok(Err(refusal.into())),
        }
        let secret = WebhookSecret::generate();
        let endpoint_id = self.repo.insert(actor.id, reach == Reach::Team, url.as_str(), &types, &secret).await?;
        tracing::info!(endpoint_id, owner_id = actor.id, team = reach == Reach::Team, "webhook endpoint registered");
        Ok(Ok(Registered { endpoint_id, secret }))
    }

    /// `actor`'s endpoints, oldest first.
    pub async fn endpoints(&self, actor: &User) -> Result<Vec<Endpoint>, Fault> {
        Ok(self.repo.of_owner(actor.id).await?)
    }

    /// `actor`'s endpoints older than `before` (any without it), newest first, at most `limit`,
    /// each with its latest message: a page of them for the API. (A person has a few endpoints:
    /// their list is read whole, as the page reads it, and cut here.)
    pub async fn endpoints_page(
        &self,
        actor: &User,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<(Endpoint, Option<LogEntry>)>, Fault> {
        let older = |endpoint: &Endpoint| before.is_none_or(|before| endpoint.id < before);
        let endpoints: Vec<Endpoint> = self.endpoints(actor).await?.into_iter().rev().filter(older).collect();
        let mut page = Vec::new();
        for endpoint in endpoints.into_iter().take(usize::try_from(limit).unwrap_or(0)) {
            let latest = self.messages.log(endpoint.id, 1).await?.pop();
            page.push((endpoint, latest));
        }
        Ok(page)
    }

    /// One of `actor`'s endpoints with its delivery log; `None` when it is not theirs.
    pub async fn endpoint(&self, actor: &User, id: i64) -> Result<Option<EndpointPage>, Fault> {
        let Some(endpoint) = self.repo.one(id, actor.id).await? else { return Ok(None) };
        let log = self.messages.log(id, LOG_LENGTH).await?;
        Ok(Some(EndpointPage { endpoint, log }))
    }

    /// A new secret for `actor`'s endpoint, to show once; `None` when it is not theirs.
    pub async fn rotate_secret(&self, actor: &User, id: i64) -> Result<Option<WebhookSecret>, Fault> {
        let secret = WebhookSecret::generate();
        let rotated = self.repo.rotate(id, actor.id, &secret, ROTATION_OVERLAP).await?;
        Ok(rotated.then_some(secret))
    }

    /// Turns `actor`'s endpoint on or off (off: its waiting messages are dropped); false when it
    /// is not theirs.
    pub async fn set_enabled(&self, actor: &User, id: i64, enabled: bool) -> Result<bool, Fault> {
        Ok(self.repo.set_enabled(id, actor.id, enabled).await?)
    }

    /// Deletes `actor`'s endpoint and its messages; false when it is not theirs.
    pub async fn delete(&self, actor: &User, id: i64) -> Result<bool, Fault> {
        Ok(self.repo.delete(id, actor.id).await?)
    }

    /// Queues a `webhook.test` message to `actor`'s endpoint; false when it is not theirs.
    pub async fn send_test(&self, actor: &User, id: i64) -> Result<bool, Fault> {
        if self.repo.one(id, actor.id).await?.is_none() {
            return Ok(false);
        }
        let mut nonce = [0u8; 12];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut nonce);
        let body = payload::test(id, chrono::Utc::now());
        let source = format!("test:{}", hex::encode(nonce));
        Ok(self.messages.enqueue(id, &source, actor.id, EventType::Test, &body).await?)
    }

    /// Makes the messages of the timeline events and new shares committed since the last pass;
    /// answers how many it stored.
    pub async fn dispatch(&self) -> Result<u32, Fault> {
        let endpoints = self.repo.listening().await?;
        let mut stored = 0;
        for source in [Source::Shares, Source::Events] {
            stored += self.dispatch_from(source, &endpoints).await?;
        }
        Ok(stored)
    }

    async fn dispatch_from(&self, source: Source, endpoints: &[Endpoint]) -> Result<u32, Fault> {
        // Ids up to the oldest endpoint's start are news to none: with no endpoint, nothing is read.
        let Some(floor) = endpoints.iter().map(|e| e.after(source)).min() else { return Ok(0) };
        let cursor = self.repo.cursor(source).await?;
        let from = (cursor.max(floor) - LOOKBACK).max(0);
        let rows = self.repo.candidates(source, from, LOOKBACK + DISPATCH_BATCH).await?;
        let mut stored = 0;
        for row in &rows {
            if self.made.contains(source, row.source_id) {
                continue;
            }
            let event = match source {
                Source::Shares => Some(EventType::ShareCreated),
                Source::Events => row.event_kind.and_then(EventType::of_timeline),
            };
            let listeners: Vec<&Endpoint> = match event.filter(|_| !row.barred) {
                Some(event) => {
                    endpoints.iter().filter(|e| e.hears(event, row.sender_id, source, row.source_id)).collect()
                }
                None => Vec::new(),
            };
            if let (Some(event), false) = (event, listeners.is_empty()) {
                let body = payload::about_share(event, row.at.0, &self.facts(row).await?);
                let key = format!("{}:{}", source.name(), row.source_id);
                for endpoint in listeners {
                    stored += u32::from(self.messages.enqueue(endpoint.id, &key, row.sender_id, event, &body).await?);
                }
            }
            self.made.insert(source, row.source_id);
        }
        let last = rows.last().map_or(cursor, |row| row.source_id);
        if last > cursor {
            self.repo.advance(source, last).await?;
        }
        self.made.forget_before(source, last.max(cursor) - LOOKBACK);
        Ok(stored)
    }

    async fn facts(&self, row: &Candidate) -> Result<ShareFacts, Fault> {
        let files = self.repo.files(row.handover_id).await?;
        let file = row.file_position.and_then(|position| files.iter().find(|f| f.position == position).cloned());
        Ok(ShareFacts {
            share_id: row.share_id,
            handover_id: row.handover_id,
            share_kind: row.share_kind.clone(),
            recipient: row.recipient.clone(),
            files,
            file,
        })
    }

    /// Sends the due messages, one attempt each and [`DELIVERY_CONCURRENCY`] at a time, so that a
    /// receiver that hangs until the timeout holds up only its own messages: a 2xx is delivered,
    /// anything else waits for its backoff, and a message failing for [`GIVE_UP_AFTER`] is given
    /// up. A message of a sender disabled or being deleted, or of a disabled endpoint, is dropped
    /// unsent.
    pub async fn deliver_due(&self) -> Result<DeliveryReport, Fault> {
        let recovered = self.messages.recover_stuck(STUCK_AFTER).await?;
        if recovered > 0 {
            tracing::warn!(recovered, "took back webhook messages abandoned mid-send");
        }
        let ids = self.messages.due_ids(DELIVERY_BATCH).await?;
        let mut outcomes = stream::iter(ids).map(|id| self.deliver_one(id)).buffer_unordered(DELIVERY_CONCURRENCY);
        let mut report = DeliveryReport::default();
        // A fault on one message does not stop the others mid-send (they would sit in 'sending'
        // until taken back, and go out twice): every one runs to its end, then the first fault
        // is the pass's.
        let mut fault = None;
        while let Some(outcome) = outcomes.next().await {
            let outcome = match outcome {
                Ok(Some(outcome)) => outcome,
                Ok(None) => continue,
                Err(error) => {
                    fault.get_or_insert(error);
                    continue;
                }
            };
            *match outcome {
                Outcome::Delivered => &mut report.delivered,
                Outcome::Retrying => &mut report.retrying,
                Outcome::Dead => &mut report.dead,
                Outcome::Dropped => &mut report.dropped,
            } += 1;
            self.metrics.webhook_delivery(outcome.code());
        }
        fault.map_or(Ok(report), Err)
    }

    /// Drops or claims and sends one due message; `None` when another worker has it.
    async fn deliver_one(&self, id: i64) -> Result<Option<Outcome>, Fault> {
        if self.messages.drop_unsendable(id).await? {
            return Ok(Some(Outcome::Dropped));
        }
        let Some(message) = self.messages.claim(id).await? else { return Ok(None) };
        let outcome = match self.attempt(&message).await {
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

    /// One worker step: dispatch, then deliver; failures are logged and retried next time.
    pub async fn tick(&self) {
        if let Err(error) = self.dispatch().await {
            tracing::warn!(%error, "webhook dispatch failed");
        }
        match self.deliver_due().await {
            Ok(report) if report != DeliveryReport::default() => tracing::info!(?report, "webhook delivery pass"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "webhook delivery pass failed"),
        }
    }
}

/// Parses an endpoint's URL: an absolute http(s) URL with a host, no credentials, not too long.
fn parse_url(text: &str) -> Result<Url, EndpointRefusal> {
    let text = text.trim();
    if text.len() > URL_LIMIT {
        return Err(EndpointRefusal::NotAUrl);
    }
    let url = Url::parse(text).map_err(|_| EndpointRefusal::NotAUrl)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EndpointRefusal::NotAUrl);
    }
    AddressGuard::check_form(&url)?;
    Ok(url)
}

/// Half the wait plus a random part of the other half, so that receivers that failed together are
/// not retried together.
fn jittered(wait: Duration) -> Duration {
    wait.mul_f64(rand::rng().random_range(0.5..=1.0))
}

/// Dispatches and delivers every `interval` (and once at start) until `shutdown` resolves.
pub async fn run_webhook_worker(webhooks: Webhooks, interval: Duration, shutdown: impl Future<Output = ()>) {
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        webhooks.tick().await;
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(interval) => {}
        }
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
    fn urls_with_credentials_or_other_schemes_are_not_endpoints() {
        assert_eq!(parse_url("https://user:pw@hooks.example.test/"), Err(EndpointRefusal::NotAUrl));
        assert_eq!(parse_url("hooks.example.test"), Err(EndpointRefusal::NotAUrl));
        assert_eq!(parse_url("ftp://hooks.example.test/"), Err(EndpointRefusal::Address(Refusal::Scheme)));
        assert!(parse_url(" https://hooks.example.test/in ").is_ok());
    }
}
