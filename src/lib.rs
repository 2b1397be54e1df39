//! watasu (渡す, "to hand over"): hand one file to one person safely.
//!
//! The map, from the outside in:
//!
//! - Entry points: `main` (logging, runtime, exit code), [`cli`] (the command tree and each command),
//!   [`web`] (routes, handlers, extractors, templates, middleware, error pages) and [`server`]
//!   (the hyper loop with its transport deadlines). They parse input into domain types, call one
//!   use case in [`services`], and render what it answers; none of them holds SQL.
//! - [`services`]: the use cases (`sharing` for senders, `handover` for recipients, `accounts`,
//!   plus deletion, maintenance and GC), built once from the settings, and the background workers.
//! - Domain modules, each with its rules and its SQL: [`share`] (links, grants, events, and
//!   `share::writes`, every statement that changes a share), [`otp`] (one-time codes),
//!   [`lifecycle`] (the claim, delivered ranges, the GC with its upload and leftover duties),
//!   [`request`] (file requests: a share pointed the other way, its limits and states),
//!   [`storage`] (where file contents live: the store traits, the local folder, the object
//!   store, the migration between them), [`accounts`] (also personal API tokens), [`session`], [`mail`] (messages,
//!   transports, the outbox), [`deletion`] (verifiable deletion cases), [`maintenance`] (sweeps,
//!   run ledger, leases, scheduler), [`ratelimit`], [`uploads`] (resumable tus uploads), [`sso`]
//!   (the OpenID provider, pending sign-ins, account links), [`scan`] (the optional virus scan by
//!   clamd, failing closed), [`webhooks`] (signed messages about shares to registered endpoints,
//!   their outbox and the address guard).
//! - Foundations: [`config`] (settings, validated once), [`db`] (the two backends, the dialect
//!   toolkit, stored codes as enums, `Timestamp`), [`secret`] (and [`key_check`], the keys at
//!   start-up; [`row_seal`], columns sealed under a key derived from the secret), [`i18n`] (the strings by area, both languages side by side), [`text`], [`retry`],
//!   [`guarded_body`], [`zip`] (a stored-files archive laid out without reading the files), [`metrics`] (the Prometheus series), [`memory`] (giving freed memory back to the system).
//!
//! [`App`] wires them together and is what both `main` and the integration tests start.

pub mod accounts;
pub mod cli;
pub mod config;
pub mod db;
pub mod deletion;
pub mod guarded_body;
pub mod i18n;
pub mod key_check;
pub mod lifecycle;
pub mod mail;
pub mod maintenance;
pub mod memory;
pub mod metrics;
pub mod otp;
pub mod ratelimit;
pub mod request;
pub mod retry;
pub mod row_seal;
pub mod scan;
pub mod secret;
pub mod server;
pub mod services;
pub mod session;
pub mod share;
pub mod sso;
pub mod storage;
pub mod text;
pub mod uploads;
pub mod web;
pub mod webhooks;
pub mod zip;

use std::{future::Future, net::SocketAddr};

use anyhow::Context;
use poem::listener::{Acceptor, Listener, TcpAcceptor, TcpListener};

use crate::{config::Config, db::Db, web::AppState};

/// A configured application bound to its listening socket, ready to run.
pub struct App {
    state: AppState,
    /// The first-run setup link, while no account exists.
    setup_link: Option<String>,
    acceptor: TcpAcceptor,
    local_addr: SocketAddr,
}

impl App {
    /// Prepares the data folder, the secret key, the database (with migrations) and the mailer,
    /// then binds the listener (port 0 picks a free port, as tests do).
    pub async fn build(mut config: Config) -> anyhow::Result<Self> {
        let settings = &config.settings;
        create_private_dir(&settings.data_dir)?;
        let db = open_database(&config).await?;
        let secret_key = key_check::load_secret_key(&config, &db).await?;
        let mailer = mail::from_settings(
            settings.smtp_url.as_ref().map(|s| s.expose()),
            &settings.data_dir,
            settings.smtp_timeout,
        )?;
        let acceptor = TcpListener::bind(settings.listen)
            .into_acceptor()
            .await
            .with_context(|| format!("listening on {}", settings.listen))?;
        let local_addr = acceptor
            .local_addr()
            .first()
            .and_then(|a| a.as_socket_addr().copied())
            .context("the listener has no address")?;
        if config.settings.base_url.is_none() {
            // Port 0 was resolved by the bind: links must name the real port.
            config.base_url = url::Url::parse(&format!("http://{local_addr}/"))?;
            // The redirect URI names the same real port.
            config.sso = config.settings.oidc.resolve(&config.base_url)?;
        }
        let config_arc = std::sync::Arc::new(config.clone());
        let metrics = if config.settings.metrics_token.is_some() {
            metrics::Metrics::enabled()
        } else {
            metrics::Metrics::disabled()
        };
        let store = storage::open_sealed_store(&config, &db, metrics.clone()).await?;
        let parts = services::Parts { config: config_arc, db, secret_key, mailer, store, metrics };
        let services = services::Services::new(parts);
        // Mails an older version queued in the clear hold live links: seal them before serving.
        match services.mails.outbox().seal_plain_bodies().await? {
            0 => {}
            rows => tracing::info!(rows, "sealed stored mails an older version kept in the clear"),
        }
        let state = AppState::new(config, services);
        let setup_link = state.services.accounts.open_setup().await?;
        if let Some(link) = &setup_link {
            // Printed, not only logged, so a newcomer sees it; the log line names the page only.
            // A closed standard output must not stop the server (a restart prints a new link).
            let _ =
                cli::write_line(format_args!("No account exists yet. Create the first (admin) account here: {link}"));
            tracing::warn!("no account exists yet: open the setup link printed on standard output");
        }
        Ok(Self { state, setup_link, acceptor, local_addr })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn setup_link(&self) -> Option<&str> {
        self.setup_link.as_deref()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then stops accepting and gives requests in flight
    /// (downloads included) up to the configured grace to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> std::io::Result<()> {
        let settings = &self.state.config.settings;
        let grace = settings.shutdown_grace;
        let services = self.state.services.clone();
        let workers = services.start_workers();
        tracing::info!(addr = %self.local_addr, base_url = %self.state.config.base_url, backend = services.backend_name(), "watasu is serving");
        if let Some(sso) = &self.state.config.sso {
            tracing::info!(issuer = %sso.issuer, redirect_uri = %sso.redirect_uri, "single sign-on is on: register this redirect URI at the provider");
        }
        let limits = server::Limits {
            header_timeout: settings.header_timeout,
            idle_timeout: settings.idle_timeout,
            body_timeout: settings.body_timeout,
            small_body_timeout: settings.small_body_timeout,
            small_body_bytes: web::middleware::FORM_BODY_LIMIT as u64,
            max_connections: settings.max_connections as usize,
            per_client_connections: self.state.config.per_client_connections() as usize,
            client_prefixes: server::ClientPrefixes { v4: settings.client_prefix_v4, v6: settings.client_prefix_v6 },
            min_body_rate: server::MinRate {
                bytes_per_second: settings.min_body_rate,
                window: settings.min_body_rate_window,
            },
            trusted_proxies: settings.trusted_proxies.clone(),
        };
        let metrics = services.telemetry.metrics().clone();
        let stopping = services.sharing.stopping().clone();
        let shutdown = async {
            shutdown.await;
            workers.ask_to_stop();
            stopping.begin(grace);
        };
        let result = server::serve(self.acceptor, web::app(self.state), limits, metrics, shutdown, grace).await;
        services.stop(workers).await;
        result
    }
}

/// Creates the data folder readable by its owner only: it holds the database, the files and the key.
pub fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    private_dir_all(dir).with_context(|| format!("creating the data folder {}", dir.display()))
}

/// `create_dir_all` whose new folders are 0700 whatever the process umask: every folder watasu
/// makes holds the database, stored files or mails.
pub fn private_dir_all(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Makes every file and folder this process creates private to its owner (umask 077), before
/// anything touches the data folder: the database, stored files and .eml mails are created by
/// code that takes no mode (SQLite, the mail file transport), and a folder first made by a CLI
/// command must be as closed as one made by `serve`.
pub fn restrict_new_file_modes() {
    // SAFETY: umask only sets the process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// True for `localhost` (and names under it) and loopback addresses, as written in a URL's host
/// (`[::1]` included): connections to them never leave the machine.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// Connects to the configured database and applies pending migrations.
pub async fn open_database(config: &Config) -> anyhow::Result<Db> {
    create_private_dir(&config.settings.data_dir)?;
    if let db::TlsCheck::Unverified { host, mode } = db::check_postgres_tls(&config.database_url) {
        // Only reached with WATASU_DATABASE_ALLOW_UNVERIFIED_TLS: the operator chose this.
        tracing::warn!(
            host,
            sslmode = mode,
            "PostgreSQL's certificate is not verified (WATASU_DATABASE_ALLOW_UNVERIFIED_TLS): anyone on the network path can pose as the database"
        );
    }
    let db = Db::connect(&config.database_url, config.settings.db_timeout).await?;
    db.migrate().await?;
    Ok(db)
}
