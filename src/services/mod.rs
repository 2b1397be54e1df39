//! The use cases. Web handlers and CLI commands parse their input into domain types, call one
//! service, and render what it answers; only services call repositories, so a rule (a limit, a
//! validation, a mail) lives in one place and the web form and the CLI cannot drift apart.
//! [`Services::new`] wires every repository once, for `serve` and for the CLI alike.

pub mod handover;
pub mod mails;
pub mod sharing;

use std::sync::Arc;

use crate::{config::Config, db::Db, lifecycle::FileStore, mail::Mailer, secret::SecretKey};

/// What failed underneath a use case, as far as a caller must tell it apart: the database cannot
/// be reached now (try again: 503), or anything else (500). No database type leaves `services`.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("the database is unavailable")]
    Unavailable(#[source] anyhow::Error),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<sqlx::Error> for Fault {
    fn from(error: sqlx::Error) -> Self {
        if crate::db::is_unavailable(&error) { Self::Unavailable(error.into()) } else { Self::Internal(error.into()) }
    }
}

impl From<anyhow::Error> for Fault {
    fn from(error: anyhow::Error) -> Self {
        match error.downcast::<sqlx::Error>() {
            Ok(sql) => sql.into(),
            Err(other) => Self::Internal(other),
        }
    }
}

/// What every service is built from.
#[derive(Clone)]
pub struct Parts {
    pub config: Arc<Config>,
    pub db: Db,
    pub secret_key: SecretKey,
    pub mailer: Arc<dyn Mailer>,
    pub store: Arc<dyn FileStore>,
}

/// Every use case, wired once.
#[derive(Clone)]
pub struct Services {
    pub sharing: sharing::Sharing,
    pub handover: handover::Handover,
    db: Db,
}

impl Services {
    pub fn new(parts: Parts) -> Self {
        let mails = mails::Mails::new(&parts);
        Self {
            sharing: sharing::Sharing::new(&parts, mails.clone()),
            handover: handover::Handover::new(&parts, mails),
            db: parts.db,
        }
    }

    /// Whether the database takes queries right now (for /readyz).
    pub async fn ready(&self) -> bool {
        self.db.ping().await.is_ok()
    }

    pub fn backend_name(&self) -> &'static str {
        self.db.backend_name()
    }

    pub async fn close(&self) {
        self.db.close().await
    }
}
