//! Whether this instance should take traffic: the database answers and, once it has refused a
//! write for lack of space, takes a small write again. A balancer reading `/readyz` then stops
//! sending requests that could only fail, and sends them again by itself once space is freed.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use crate::{db::Db, metrics::Metrics};

/// The database as `/readyz` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatabaseState {
    Ready,
    Unavailable,
    /// Its disk is full: reads work, writes are refused.
    Full,
}

#[derive(Clone, Debug)]
pub struct Readiness {
    db: Db,
    /// Set when a request met the disk full; cleared by the first write probe that succeeds.
    full: Arc<AtomicBool>,
    metrics: Metrics,
}

impl Readiness {
    pub fn new(db: Db, metrics: Metrics) -> Self {
        Self { db, full: Arc::default(), metrics }
    }

    /// A request was refused because the database's disk was full: counted, and `/readyz`
    /// fails until a write goes through again.
    pub fn database_full(&self) {
        self.full.store(true, Ordering::Relaxed);
        self.metrics.database_full();
    }

    /// Pings the database; after a disk-full refusal, also tries one small write (only then: a
    /// healthy instance's probes stay read-only).
    pub async fn database(&self) -> DatabaseState {
        if self.db.ping().await.is_err() {
            return DatabaseState::Unavailable;
        }
        if !self.full.load(Ordering::Relaxed) {
            return DatabaseState::Ready;
        }
        match crate::db::write_probe(&self.db).await {
            Ok(()) => {
                self.full.store(false, Ordering::Relaxed);
                tracing::info!("the database takes writes again");
                DatabaseState::Ready
            }
            Err(error) if crate::db::is_disk_full(&error) => DatabaseState::Full,
            Err(_) => DatabaseState::Unavailable,
        }
    }
}
