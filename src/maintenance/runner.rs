//! Runs sweeps: accepts a run into the ledger, then executes it under one lease per sweep, in
//! bounded batches with a cap on batches and on time, and finishes it with a state that says
//! whether anything was left for the next run.

use std::time::{Duration, Instant};

use super::{
    Kind, Leases, Ledger, Note, NotePart, Reason, Run, RunState, Trigger, error_class,
    sweep::{Sweep, SweepSettings},
};
use crate::{db::Db, metrics::Metrics, secret::random_token};

/// How much one run may do before it leaves the rest for the next one.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Rows per batch: one short transaction each, so pages never wait long for the database.
    pub batch_size: u32,
    pub max_batches: u32,
    pub max_time: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self { batch_size: 250, max_batches: 800, max_time: Duration::from_secs(30) }
    }
}

impl Budget {
    /// The rest after a batch: as long as the batch took, so a sweep holds the database (SQLite's
    /// one writer lock above all) at most half the time and pages in between do not queue behind
    /// a backlog of batches.
    pub fn pause_after(batch_took: Duration) -> Duration {
        batch_took
    }
}

/// A sweep's lease lasts this long and is renewed after every batch.
pub const LEASE_TTL: Duration = Duration::from_secs(60);
/// The lease that spaces out authenticated triggers.
const TRIGGER_LEASE: &str = "http_trigger";

/// The answer to an authenticated trigger.
#[derive(Debug)]
pub enum TriggerOutcome {
    /// A new run, to be executed in the background.
    Accepted(Run),
    /// The Idempotency-Key names this run already.
    Replayed(Run),
    /// Too soon after the last trigger: try again after this long.
    TooSoon(Duration),
    /// The Idempotency-Key was used for a run of another kind.
    KeyReused,
}

#[derive(Clone, Debug)]
pub struct Maintenance {
    db: Db,
    ledger: Ledger,
    leases: Leases,
    settings: SweepSettings,
    budget: Budget,
    lease_ttl: Duration,
    min_trigger_interval: Duration,
    /// Counts the rows each sweep handled.
    metrics: Metrics,
}

/// How one sweep within a run ended.
enum SweepEnd {
    Done,
    /// At the batch or the time cap.
    Capped(Reason),
    Busy,
    LeaseLost,
}

impl Maintenance {
    pub fn new(db: Db, settings: SweepSettings, min_trigger_interval: Duration) -> Self {
        Self {
            ledger: Ledger::new(db.clone()),
            leases: Leases::new(db.clone()),
            db,
            settings,
            budget: Budget::default(),
            lease_ttl: LEASE_TTL,
            min_trigger_interval,
            metrics: Metrics::disabled(),
        }
    }

    /// Counts the sweeps' rows in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The sweeps as the configuration sets them.
    pub fn from_settings(db: Db, settings: &crate::config::Settings) -> Self {
        let sweeps = SweepSettings { session_idle: settings.session_idle, retention: settings.retention };
        Self::new(db, sweeps, settings.maintenance_min_interval)
    }

    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn leases(&self) -> &Leases {
        &self.leases
    }

    pub fn sweep(&self, kind: Kind) -> Sweep {
        Sweep::new(kind, self.settings)
    }

    /// Accepts and executes a run now (timer, CLI).
    pub async fn run_now(&self, kind: Kind, trigger: Trigger) -> Result<Run, sqlx::Error> {
        let (run, _) = self.ledger.accept(kind, trigger, random_token().expose()).await?;
        self.execute(run.id).await
    }

    /// The authenticated trigger: the same key gives back the same run; a new run is accepted at
    /// most once per minimum interval, whoever asks, across instances.
    pub async fn trigger(&self, kind: Kind, key: Option<&str>) -> Result<TriggerOutcome, sqlx::Error> {
        let replay = |run: Run| {
            if run.kind == kind { TriggerOutcome::Replayed(run) } else { TriggerOutcome::KeyReused }
        };
        if let Some(key) = key
            && let Some(run) = self.ledger.find_by_key(key).await?
        {
            return Ok(replay(run));
        }
        if !self.leases.try_take(TRIGGER_LEASE, "http", self.min_trigger_interval).await? {
            // A concurrent request with the same key may have just made the run.
            if let Some(key) = key
                && let Some(run) = self.ledger.find_by_key(key).await?
            {
                return Ok(replay(run));
            }
            let wait = self.leases.remaining(TRIGGER_LEASE).await?;
            return Ok(TriggerOutcome::TooSoon(Duration::from_secs_f64(wait.ceil().max(1.0))));
        }
        let generated = random_token();
        let (run, new) = self.ledger.accept(kind, Trigger::Http, key.unwrap_or(generated.expose())).await?;
        Ok(if new { TriggerOutcome::Accepted(run) } else { replay(run) })
    }

    /// Executes an accepted run to its end and returns it as the ledger has it then. A database
    /// failure during the run is recorded as the run's note and state, not returned.
    pub async fn execute(&self, run_id: i64) -> Result<Run, sqlx::Error> {
        // No run may take longer than this, so anything older still open has died.
        self.ledger.abandon_stale(self.budget.max_time + 2 * self.lease_ttl).await?;
        let Some(run) = self.ledger.start(run_id).await? else {
            return self.get(run_id).await;
        };
        let cutoff = run.cutoff.expect("a started run has its cutoff");
        let kind = run.kind;
        let started = Instant::now();
        let mut batches = 0;
        let mut notes = Vec::new();
        let mut state = RunState::Succeeded;
        for sweep_kind in kind.sweeps() {
            match self.sweep_one(run_id, sweep_kind, cutoff, &mut batches, started).await {
                Ok(SweepEnd::Done) => {}
                // A skip, not a shortfall: the run holding the lease does this sweep's work now
                // (on a scale-out every instance's timer fires at once, and all but one skip).
                Ok(SweepEnd::Busy) => notes.push(NotePart { sweep: Some(sweep_kind), reason: Reason::Busy }),
                Ok(SweepEnd::Capped(cap)) => {
                    notes.push(NotePart { sweep: Some(sweep_kind), reason: cap });
                    state = RunState::Partial;
                    break;
                }
                Ok(SweepEnd::LeaseLost) => {
                    notes.push(NotePart { sweep: Some(sweep_kind), reason: Reason::LeaseLost });
                    state = RunState::Failed;
                    break;
                }
                Err(error) => {
                    tracing::warn!(run_id, sweep = sweep_kind.code(), %error, "maintenance sweep failed");
                    notes.push(NotePart { sweep: Some(sweep_kind), reason: error_class(&error) });
                    state = RunState::Failed;
                    break;
                }
            }
        }
        let note = (!notes.is_empty()).then(|| Note::new(notes));
        // None: the run was declared abandoned meanwhile; the ledger has the last word.
        let run = match self.ledger.finish(run_id, state, note.as_ref()).await? {
            Some(run) => run,
            None => self.get(run_id).await?,
        };
        tracing::info!(run_id, kind = %run.kind, state = %run.state, deleted = run.deleted, skipped = run.skipped,
            already_gone = run.already_gone, batches = run.batches, "maintenance run finished");
        Ok(run)
    }

    async fn get(&self, run_id: i64) -> Result<Run, sqlx::Error> {
        self.ledger.get(run_id).await?.ok_or(sqlx::Error::RowNotFound)
    }

    /// One sweep under its lease, batch after batch, until done or a cap is reached.
    async fn sweep_one(
        &self,
        run_id: i64,
        kind: Kind,
        cutoff: crate::db::Timestamp,
        batches: &mut u32,
        started: Instant,
    ) -> Result<SweepEnd, sqlx::Error> {
        let name = kind.code();
        let holder = run_id.to_string();
        let Some(taken) = self.leases.acquire(name, &holder, self.lease_ttl).await? else {
            return Ok(SweepEnd::Busy);
        };
        if let Some(previous) = taken.previous_holder.and_then(|p| p.parse::<i64>().ok())
            && self.ledger.abandon(previous).await?
        {
            tracing::warn!(run_id, abandoned = previous, sweep = name, "took over the lease of a run that stopped");
        }
        let sweep = self.sweep(kind);
        let mut walk = sweep.start(self.db.clone(), run_id, cutoff);
        let end = async {
            loop {
                if *batches >= self.budget.max_batches {
                    return Ok(SweepEnd::Capped(Reason::BatchCap));
                }
                if started.elapsed() >= self.budget.max_time {
                    return Ok(SweepEnd::Capped(Reason::TimeCap));
                }
                let batch_started = Instant::now();
                let ids = walk.scan(self.budget.batch_size).await?;
                if ids.is_empty() {
                    return Ok(SweepEnd::Done);
                }
                let report = walk.apply(&ids).await?;
                self.metrics.swept_rows(name, report.deleted, report.skipped, report.already_gone);
                *batches += 1;
                tokio::time::sleep(Budget::pause_after(batch_started.elapsed())).await;
                if !self.leases.renew(name, &holder, self.lease_ttl).await? {
                    return Ok(SweepEnd::LeaseLost);
                }
                if ids.len() < self.budget.batch_size as usize {
                    return Ok(SweepEnd::Done);
                }
            }
        }
        .await;
        if let Err(error) = self.leases.release(name, &holder).await {
            tracing::warn!(%error, sweep = name, "could not release a lease; it runs out by itself");
        }
        end
    }
}
