//! The use cases. Web handlers and CLI commands parse their input into domain types, call one
//! service, and render what it answers; only services call repositories, so a rule (a limit, a
//! validation, a mail) lives in one place and the web form and the CLI cannot drift apart.
//! [`Services::new`] wires every repository once, for `serve` and for the CLI alike.

pub mod accounts;
pub mod browsers;
pub mod delivery;
pub mod handover;
pub mod mails;
pub mod passkeys;
pub mod readiness;
pub mod records;
pub mod requests;
pub mod scanning;
pub mod second_factor;
pub mod sharing;
pub mod sso;
pub mod stopping;
pub mod storage;
pub mod telemetry;
pub mod tokens;
pub mod uploads;
pub mod webhooks;

use std::sync::Arc;

use crate::{
    config::Config,
    db::Db,
    deletion::{self, Runner, journal::Journal, run_deletion_worker},
    lifecycle::{GcRunner, LifecycleRepository, ShareGc},
    mail::{
        Mailer,
        outbox::{self, run_outbox_worker},
    },
    maintenance::{Maintenance, Schedule, run_scheduler},
    metrics::Metrics,
    otp::Codes,
    secret::SecretKey,
    session::Sessions,
    share::{ShareAccess, ShareEvents},
    storage::SweptStore,
};

/// What failed underneath a use case, as far as a caller must tell it apart: the database cannot
/// be reached now (try again: 503), or anything else (500). No database type leaves `services`.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("the database is unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// The file store cannot be reached now (try again: 503).
    #[error("the file store is unavailable")]
    StorageUnavailable(#[source] crate::storage::StoreError),
    /// The database's disk is full: nothing was written (507; try again later).
    #[error("the database's disk is full")]
    DatabaseFull(#[source] anyhow::Error),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl Fault {
    /// A store failure underneath a use case: its I/O (a bucket or disk that does not answer) is
    /// worth a retry; anything else is an internal error.
    pub fn of_store(error: crate::storage::StoreError) -> Self {
        match error {
            crate::storage::StoreError::Io(_) => Self::StorageUnavailable(error),
            other => Self::Internal(other.into()),
        }
    }
}

impl From<sqlx::Error> for Fault {
    fn from(error: sqlx::Error) -> Self {
        if crate::db::is_unavailable(&error) {
            Self::Unavailable(error.into())
        } else if crate::db::is_disk_full(&error) {
            Self::DatabaseFull(error.into())
        } else {
            Self::Internal(error.into())
        }
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
    pub store: Arc<dyn SweptStore>,
    /// This instance's series (disabled without a metrics token, and for commands).
    pub metrics: Metrics,
}

/// The repositories that take a setting or the key, each wired here once: the use cases build
/// theirs from these, and so do the integration tests that arrange and check rows below them.
impl Parts {
    /// The lifecycle repository under this instance's delivery grace and purge back-off.
    pub fn lifecycle(&self) -> LifecycleRepository {
        let settings = &self.config.settings;
        LifecycleRepository::new(self.db.clone(), settings.delivery_grace, settings.purge_retry_base)
    }

    /// Browser sessions under this instance's idle and absolute timeouts.
    pub fn sessions(&self) -> Sessions {
        let settings = &self.config.settings;
        Sessions::new(self.db.clone(), settings.session_idle, settings.session_max_age)
    }

    /// Share links and download grants under this instance's grant lifetime.
    pub fn share_access(&self) -> ShareAccess {
        ShareAccess::over(self.db.clone(), self.config.settings.grant_ttl)
    }

    /// One-time codes under this instance's key.
    pub fn codes(&self) -> Codes {
        Codes::new(self.db.clone(), &self.secret_key)
    }
}

/// The ways in a sign-in page offers, asked together so every page offers the same.
#[derive(Clone, Debug)]
pub struct SignInMethods {
    /// The single sign-on provider's name; `None`: single sign-on is not configured.
    pub sso_name: Option<String>,
    /// Passwords are on (off: single sign-on only).
    pub passwords_allowed: bool,
    /// Passkeys can be used: the address has a domain and passwords are on.
    pub passkeys_available: bool,
}

/// Every use case, wired once.
#[derive(Clone)]
pub struct Services {
    pub sharing: sharing::Sharing,
    /// Resumable (tus) uploads.
    pub uploads: uploads::Uploads,
    pub handover: handover::Handover,
    /// File requests: made by senders, answered by verified uploaders.
    pub requests: requests::Requests,
    /// The bytes of claimed files, in ranges, and how far each download got.
    pub deliveries: delivery::Deliveries,
    pub accounts: accounts::Accounts,
    /// Personal API tokens and the check of a bearer request.
    pub tokens: tokens::Tokens,
    /// Second factors, pending sign-ins and the team's sign-in policy.
    pub factors: second_factor::Factors,
    /// Passkeys: registered on the account page, signing in alone or after a password.
    pub passkeys: passkeys::PasskeySignIn,
    /// Single sign-on and the switch between passwords and single sign-on only.
    pub sso: sso::SingleSignOn,
    /// Opens and runs deletion cases (in the background, after the request).
    pub deletion: Runner,
    pub maintenance: Maintenance,
    pub gc: GcRunner,
    /// Browser sessions, which the web layer keeps in a cookie.
    pub browsers: browsers::Browsers,
    /// What the admin pages read.
    pub records: records::Records,
    pub mails: mails::Mails,
    /// What `GET /metrics` renders.
    pub telemetry: telemetry::Telemetry,
    /// `watasu storage migrate`.
    pub file_moves: storage::FileMoves,
    /// What `/readyz` answers.
    pub readiness: readiness::Readiness,
    /// The virus scan's worker and backlog.
    pub scanning: scanning::Scanning,
    /// Webhook endpoints, and the dispatch and delivery of their messages.
    pub webhooks: webhooks::Webhooks,
    parts: Parts,
}

impl Services {
    pub fn new(parts: Parts) -> Self {
        let settings = &parts.config.settings;
        let db = &parts.db;
        let mails = mails::Mails::new(&parts);
        let sessions = parts.sessions();
        let lifecycle = parts.lifecycle();
        let deliveries = delivery::Deliveries::new(
            lifecycle.clone(),
            parts.store.clone(),
            ShareEvents::new(db.clone()),
            mails.clone(),
        );
        let share_gc = ShareGc::new(lifecycle, parts.store.clone(), ShareEvents::new(db.clone()))
            .with_metrics(parts.metrics.clone());
        let journal = Journal::in_data_dir(&settings.data_dir);
        let deletion =
            Runner::new(db.clone(), parts.store.clone(), parts.mailer.clone(), parts.config.mail_origin(), journal);
        let maintenance = Maintenance::from_settings(db.clone(), settings).with_metrics(parts.metrics.clone());
        let uploads = uploads::Uploads::new(&parts);
        let factors = second_factor::Factors::new(&parts, sessions.clone());
        let accounts = accounts::Accounts::new(&parts, sessions.clone(), mails.clone(), factors.clone());
        let scan_wake = scanning::ScanWake::default();
        let sharing = sharing::Sharing::new(&parts, mails.clone(), uploads.clone(), scan_wake.clone());
        Self {
            scanning: scanning::Scanning::new(&parts, sharing.clone(), mails.clone(), scan_wake.clone()),
            sharing,
            handover: handover::Handover::new(&parts, mails.clone(), deliveries.clone()),
            requests: requests::Requests::new(&parts, mails.clone(), scan_wake, uploads.clone()),
            deliveries,
            passkeys: passkeys::PasskeySignIn::new(&parts, sessions.clone(), accounts.clone(), factors.clone()),
            tokens: tokens::Tokens::new(&parts, accounts.clone()),
            accounts,
            factors,
            sso: sso::SingleSignOn::new(&parts, sessions.clone()),
            records: records::Records::new(deletion.cases().clone(), maintenance.ledger().clone()),
            deletion,
            maintenance,
            gc: GcRunner::new(share_gc, settings.gc_batch),
            browsers: browsers::Browsers::new(sessions),
            mails,
            telemetry: telemetry::Telemetry::new(&parts),
            file_moves: storage::FileMoves::new(&parts),
            readiness: readiness::Readiness::new(parts.db.clone(), parts.metrics.clone()),
            webhooks: webhooks::Webhooks::new(&parts),
            uploads,
            parts,
        }
    }

    /// Everything a command needs, from the settings: the key, the database (migrated), the mailer
    /// and the file store.
    pub async fn open(config: &Config) -> anyhow::Result<Self> {
        let settings = &config.settings;
        crate::create_private_dir(&settings.data_dir)?;
        let db = crate::open_database(config).await?;
        let secret_key = crate::key_check::load_secret_key(config, &db).await?;
        let mailer = crate::mail::from_settings(
            settings.smtp_url.as_ref().map(|s| s.expose()),
            &settings.data_dir,
            settings.smtp_timeout,
        )?;
        let store = crate::storage::open_sealed_store(config, &db, Metrics::disabled()).await?;
        let (config, metrics) = (Arc::new(config.clone()), Metrics::disabled());
        Ok(Self::new(Parts { config, db, secret_key, mailer, store, metrics }))
    }

    /// What the services were built from: the pool, the key, the mailer and the store (for the
    /// web layer's keys and for tests that reach below the use cases).
    pub fn parts(&self) -> &Parts {
        &self.parts
    }

    /// What the sign-in pages offer now: single sign-on, passwords, passkeys.
    pub async fn sign_in_methods(&self) -> Result<SignInMethods, Fault> {
        let passwords_allowed = self.accounts.passwords_allowed().await?;
        Ok(SignInMethods {
            sso_name: self.sso.name().map(str::to_owned),
            passwords_allowed,
            passkeys_available: self.passkeys.unavailable_with(passwords_allowed).is_none(),
        })
    }

    pub fn backend_name(&self) -> &'static str {
        self.parts.db.backend_name()
    }

    /// Starts the background loops of a serving instance: the GC and maintenance timer, the mail
    /// outbox, the deletion worker, the virus scan and the webhooks.
    pub fn start_workers(&self) -> Workers {
        let settings = &self.parts.config.settings;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let until_stopped = move || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }
        };
        let schedule = Schedule {
            gc: self.gc.clone(),
            gc_interval: settings.gc_interval,
            maintenance: self.maintenance.clone(),
            maintenance_interval: settings.maintenance_interval,
        };
        let tasks = vec![
            tokio::spawn(run_scheduler(schedule, until_stopped())),
            tokio::spawn(run_outbox_worker(
                self.mails.outbox().clone(),
                self.mails.mailer(),
                outbox::WORKER_INTERVAL,
                until_stopped(),
                settings.shutdown_grace,
            )),
            tokio::spawn(run_deletion_worker(self.deletion.clone(), deletion::WORKER_INTERVAL, until_stopped())),
            tokio::spawn(scanning::run_scan_worker(self.scanning.clone(), scanning::WORKER_INTERVAL, until_stopped())),
            tokio::spawn(webhooks::run_webhook_worker(
                self.webhooks.clone(),
                webhooks::WORKER_INTERVAL,
                until_stopped(),
                settings.shutdown_grace,
            )),
            tokio::spawn(telemetry::run_upkeep(self.parts.metrics.clone(), until_stopped())),
            tokio::spawn(crate::memory::trim_free_pages(crate::memory::TRIM_INTERVAL, until_stopped())),
        ];
        Workers { stop, tasks }
    }

    /// Stops the workers, then closes the database.
    pub async fn stop(&self, workers: Workers) {
        let _ = workers.stop.send(true);
        for task in workers.tasks {
            let _ = task.await;
        }
        self.close().await
    }

    pub async fn close(&self) {
        self.parts.db.close().await
    }
}

/// The running background loops, until [`Services::stop`].
pub struct Workers {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workers {
    /// Tells the loops to stop after their current step. Called when the server is told to stop,
    /// so the outbox's grace runs alongside the grace of the requests in flight, not after it.
    pub fn ask_to_stop(&self) {
        let _ = self.stop.send(true);
    }
}
