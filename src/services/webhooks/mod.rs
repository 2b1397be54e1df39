//! Webhooks' use cases: an admin registers endpoints that hear about every share of the team, a
//! sender endpoints for their own shares; each is shown its secret once, may rotate it (the old
//! one still signs for [`ROTATION_OVERLAP`]), send a test event, be disabled or deleted, and shows
//! its delivery log. In the background, [`Webhooks::dispatch`] turns the committed share timeline
//! and new shares into messages and [`Webhooks::deliver_due`] sends them, at least once, with
//! capped backoff and jitter, endpoint by endpoint ([`delivery`]).
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

use url::Url;

use super::{Fault, Parts};
use crate::{
    accounts::User,
    metrics::Metrics,
    webhooks::{
        EventType,
        guard::{AddressGuard, Refusal},
        outbox::{LogEntry, Messages},
        payload::{self, ShareFacts},
        repo::{Candidate, Endpoint, Source, WebhookRepo},
        signing::WebhookSecret,
    },
};

pub mod delivery;

pub use delivery::{DeliveryReport, GIVE_UP_AFTER, WORKER_INTERVAL, run_webhook_worker};

/// How long the secret before a rotation still signs, beside the new one.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// Ids read again behind the dispatcher's cursor (see the module's comment). The webhook
/// messages' retention sweep leaves the messages of these ids alone.
pub(crate) const LOOKBACK: i64 = 200;
/// New ids one dispatch pass reads at most per source.
const DISPATCH_BATCH: i64 = 300;
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
    lanes: delivery::Lanes,
}

impl Webhooks {
    pub fn new(parts: &Parts) -> Self {
        Self {
            repo: WebhookRepo::new(parts.db.clone(), &parts.secret_key),
            made: Made::default(),
            messages: Messages::new(parts.db.clone()),
            guard: AddressGuard::new(parts.config.settings.webhook_allow_networks.clone()),
            metrics: parts.metrics.clone(),
            lanes: delivery::Lanes::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_credentials_or_other_schemes_are_not_endpoints() {
        assert_eq!(parse_url("https://user:pw@hooks.example.test/"), Err(EndpointRefusal::NotAUrl));
        assert_eq!(parse_url("hooks.example.test"), Err(EndpointRefusal::NotAUrl));
        assert_eq!(parse_url("ftp://hooks.example.test/"), Err(EndpointRefusal::Address(Refusal::Scheme)));
        assert!(parse_url(" https://hooks.example.test/in ").is_ok());
    }
}
