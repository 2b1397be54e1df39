//! Settings: flags of `watasu serve`, each also a `WATASU_*` environment variable, validated once
//! at start so that a bad value stops the process with one line that names it.

mod base_path;
mod checks;
mod duration;
mod oidc;
#[cfg(test)]
mod readme;
mod scan;
mod storage;
mod values;

pub use base_path::BasePath;
use checks::{check_bearer_token, check_durations, database_url};
pub use duration::{format_duration, parse_bytes, parse_duration};
pub use oidc::{OidcSettings, SsoConfig};
pub use scan::ScanSettings;
pub use storage::{Storage, StorageSettings};
use values::{parse_base_url, parse_database_url, parse_mailbox, parse_net};

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use ipnet::IpNet;
use url::Url;

use crate::{
    secret::{SecretKey, SecretString},
    web::middleware::ClientIpHeader,
};

/// The settings as given on the command line or in the environment.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    /// Address and port to listen on.
    #[arg(long, env = "WATASU_LISTEN", default_value = "127.0.0.1:8080", global = true)]
    pub listen: SocketAddr,

    /// Public address of the app as people reach it (links in mails, cookie flags, HSTS).
    /// Defaults to http://LISTEN.
    #[arg(long, env = "WATASU_BASE_URL", value_parser = parse_base_url, global = true)]
    pub base_url: Option<Url>,

    /// Folder for the SQLite database, stored files, development mail files and the secret key.
    #[arg(long, env = "WATASU_DATA_DIR", default_value = "./data", global = true)]
    pub data_dir: PathBuf,

    /// Database: `sqlite://PATH` or `postgres://…`. Defaults to SQLite in DATA_DIR.
    #[arg(long, env = "WATASU_DATABASE_URL", value_parser = parse_database_url, global = true)]
    pub database_url: Option<String>,

    /// Accept a remote PostgreSQL whose sslmode does not verify the server (disable, prefer,
    /// require): a warning is logged at start instead of refusing to start.
    #[arg(long, env = "WATASU_DATABASE_ALLOW_UNVERIFIED_TLS", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set, global = true)]
    pub database_allow_unverified_tls: bool,

    /// SMTP relay in lettre's URL form (`smtp://host:25`, `smtps://user:pass@host`).
    /// Unset: mails are written to DATA_DIR/dev-mail as .eml files.
    #[arg(long, env = "WATASU_SMTP_URL", global = true)]
    pub smtp_url: Option<SecretString>,

    /// The longest one mail may take with the relay, from connecting to its answer to the
    /// message. A mail not done by then is given up, its connection closed, and it counts as
    /// failed like a refused one (a code mail is retried briefly, an outbox mail later).
    #[arg(long, env = "WATASU_SMTP_TIMEOUT", default_value = "30s", value_parser = parse_duration, global = true)]
    pub smtp_timeout: Duration,

    /// Sender address of every mail watasu sends.
    #[arg(long, env = "WATASU_MAIL_FROM", default_value = "watasu <watasu@localhost>",
          value_parser = parse_mailbox, global = true)]
    pub mail_from: lettre::message::Mailbox,

    /// 64 hex characters. Unset: generated on first start and kept in DATA_DIR/secret.key.
    #[arg(long, env = "WATASU_SECRET_KEY", global = true)]
    pub secret_key: Option<SecretString>,

    /// 64 hex characters: the key the data keys of stored files are wrapped under (one value for
    /// every instance). Unset: generated on first start and kept in DATA_DIR/file.key.
    #[arg(long, env = "WATASU_FILE_KEY", global = true)]
    pub file_key: Option<SecretString>,

    /// 64 hex characters: the file key a rotation moves to (`watasu keys rotate`). Set on every
    /// instance while it runs: new files' keys are wrapped under it, and files are opened under
    /// either key. Once the rotation is done, it becomes WATASU_FILE_KEY and this is unset.
    #[arg(long, env = "WATASU_FILE_KEY_NEXT", global = true)]
    pub file_key_next: Option<SecretString>,

    /// Whether new files are stored encrypted, each under its own key (files stored before stay
    /// as they are, and are read either way). Off by default: measured at about 0.64 of
    /// nginx's sendfile (docs/decisions/), below the 0.8 that would make it the default.
    #[arg(long, env = "WATASU_ENCRYPT_FILES", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set, global = true)]
    pub encrypt_files: bool,

    /// Largest accepted upload, like 500M or 2G.
    #[arg(long, env = "WATASU_MAX_UPLOAD_BYTES", default_value = "2G", value_parser = parse_bytes, global = true)]
    pub max_upload_bytes: u64,

    /// How long a new share stays valid unless the sender picks otherwise.
    #[arg(long, env = "WATASU_SHARE_TTL", default_value = "7d", value_parser = parse_duration, global = true)]
    pub share_ttl: Duration,

    /// The longest validity a sender may pick.
    #[arg(long, env = "WATASU_SHARE_TTL_MAX", default_value = "30d", value_parser = parse_duration, global = true)]
    pub share_ttl_max: Duration,

    /// How long a verified recipient may use their download grant.
    #[arg(long, env = "WATASU_GRANT_TTL", default_value = "30m", value_parser = parse_duration, global = true)]
    pub grant_ttl: Duration,

    /// A downloaded file is kept this long after its first byte went out, for the claiming browser
    /// to resume (at least `DELIVERY_GRACE_MIN`; until a byte went out it waits for the share's expiry).
    #[arg(long, env = "WATASU_DELIVERY_GRACE", default_value = "15m", value_parser = parse_duration, global = true)]
    pub delivery_grace: Duration,

    /// The files a request's uploader left are kept this long after they finished, for the sender
    /// to fetch as often as they need; then the GC removes them.
    #[arg(long, env = "WATASU_REQUEST_RETENTION", default_value = "7d", value_parser = parse_duration, global = true)]
    pub request_retention: Duration,

    /// First wait after a failed file deletion; doubles per failure up to 64 times this.
    #[arg(long, env = "WATASU_PURGE_RETRY_BASE", default_value = "60m", value_parser = parse_duration, global = true)]
    pub purge_retry_base: Duration,

    /// Shares handled by one garbage-collection pass.
    #[arg(long, env = "WATASU_GC_BATCH", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000), global = true)]
    pub gc_batch: u32,

    /// Time between two timer-driven garbage-collection passes.
    #[arg(long, env = "WATASU_GC_INTERVAL", default_value = "60s", value_parser = parse_duration, global = true)]
    pub gc_interval: Duration,

    /// Run a small GC pass after responses are sent (turn off only to measure its cost).
    #[arg(long, env = "WATASU_ACCESS_TIME_GC", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub access_time_gc: bool,

    /// A session ends after this long without a request.
    #[arg(long, env = "WATASU_SESSION_IDLE", default_value = "12h", value_parser = parse_duration, global = true)]
    pub session_idle: Duration,

    /// A session ends this long after it began, however active.
    #[arg(long, env = "WATASU_SESSION_MAX_AGE", default_value = "7d", value_parser = parse_duration, global = true)]
    pub session_max_age: Duration,

    /// Comma-separated addresses or networks of reverse proxies whose Forwarded / X-Forwarded-For is believed.
    #[arg(
        long,
        env = "WATASU_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = parse_net,
        global = true
    )]
    pub trusted_proxies: Vec<IpNet>,

    /// Comma-separated networks webhooks may reach although they are private, loopback or
    /// link-local (`10.1.2.0/24`); only there may an endpoint's URL be plain http.
    #[arg(
        long,
        env = "WATASU_WEBHOOK_ALLOW_NETWORKS",
        value_delimiter = ',',
        value_parser = parse_net,
        global = true
    )]
    pub webhook_allow_networks: Vec<IpNet>,

    /// A request's headers must arrive within this long (from its first byte, or from the
    /// connection's start); slower clients are disconnected.
    #[arg(long, env = "WATASU_HEADER_TIMEOUT", default_value = "15s", value_parser = parse_duration, global = true)]
    pub header_timeout: Duration,

    /// A keep-alive connection with no request is closed after this long (longer than a reverse
    /// proxy's own keep-alive to the app, so the proxy closes first).
    #[arg(long, env = "WATASU_IDLE_TIMEOUT", default_value = "75s", value_parser = parse_duration, global = true)]
    pub idle_timeout: Duration,

    /// An upload that sends nothing for this long is cut. One that keeps sending is never cut,
    /// however long it takes. A connection whose client reads nothing of its response for this
    /// long is closed too.
    #[arg(long, env = "WATASU_BODY_TIMEOUT", default_value = "60s", value_parser = parse_duration, global = true)]
    pub body_timeout: Duration,

    /// Connections served at once; further ones wait in the listen queue until one closes.
    #[arg(long, env = "WATASU_MAX_CONNECTIONS", default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000), global = true)]
    pub max_connections: u32,

    /// Connections one client (its network: see WATASU_CLIENT_PREFIX_V4 and _V6) may hold at
    /// once; more are answered 429. Default: an eighth of WATASU_MAX_CONNECTIONS. Trusted proxies
    /// are held only to the cap.
    #[arg(long, env = "WATASU_MAX_CONNECTIONS_PER_CLIENT",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000), global = true)]
    pub max_connections_per_client: Option<u32>,

    /// The IPv4 network counted as one client for WATASU_MAX_CONNECTIONS_PER_CLIENT, as a prefix
    /// length: 24 counts every address of a /24 together (32: each address alone).
    #[arg(long, env = "WATASU_CLIENT_PREFIX_V4", default_value_t = 24,
          value_parser = clap::value_parser!(u8).range(8..=32), global = true)]
    pub client_prefix_v4: u8,

    /// The IPv6 network counted as one client, as a prefix length: 56 is what one subscriber is
    /// commonly given (128: each address alone).
    #[arg(long, env = "WATASU_CLIENT_PREFIX_V6", default_value_t = 56,
          value_parser = clap::value_parser!(u8).range(32..=128), global = true)]
    pub client_prefix_v6: u8,

    /// A request body must average at least this many bytes per second (like 2K) over
    /// WATASU_MIN_BODY_RATE_WINDOW while the app waits for it, or it is cut (408). 0: no floor.
    #[arg(long, env = "WATASU_MIN_BODY_RATE", default_value = "2K", value_parser = parse_bytes, global = true)]
    pub min_body_rate: u64,

    /// How long a body may fall behind WATASU_MIN_BODY_RATE (and how much it may bank ahead:
    /// this long at the floor) before it is cut.
    #[arg(long, env = "WATASU_MIN_BODY_RATE_WINDOW", default_value = "30s", value_parser = parse_duration, global = true)]
    pub min_body_rate_window: Duration,

    /// A request body no larger than a form (64 KiB) must arrive whole within this long after its
    /// headers; larger uploads are held only to WATASU_BODY_TIMEOUT, so a slow phone is never cut.
    #[arg(long, env = "WATASU_SMALL_BODY_TIMEOUT", default_value = "30s", value_parser = parse_duration, global = true)]
    pub small_body_timeout: Duration,

    /// The one header a trusted proxy names the client in: `x-forwarded-for` (what the nginx file
    /// in contrib/ and Caddy set) or `forwarded`. The other is never read.
    #[arg(long, env = "WATASU_CLIENT_IP_HEADER", value_enum, default_value = "x-forwarded-for", global = true)]
    pub client_ip_header: ClientIpHeader,

    /// On SIGTERM or Ctrl-C, requests in flight get this long to finish.
    #[arg(long, env = "WATASU_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration, global = true)]
    pub shutdown_grace: Duration,

    /// How long a request waits for a PostgreSQL connection before it answers 503.
    /// (SQLite is part of the process; its writers queue on the file lock instead.)
    #[arg(long, env = "WATASU_DB_TIMEOUT", default_value = "3s", value_parser = parse_duration, global = true)]
    pub db_timeout: Duration,

    /// Bearer token for `POST /maintenance/runs` (an uptime pinger or host scheduler may trigger
    /// the sweeps). Unset: the endpoint does not exist. At least 32 characters.
    #[arg(long, env = "WATASU_MAINTENANCE_TOKEN", global = true)]
    pub maintenance_token: Option<SecretString>,

    /// Authenticated triggers closer together than this are answered 429 with Retry-After.
    #[arg(long, env = "WATASU_MAINTENANCE_MIN_INTERVAL", default_value = "60s", value_parser = parse_duration, global = true)]
    pub maintenance_min_interval: Duration,

    /// Time between two timer-driven runs of every expiry sweep.
    #[arg(long, env = "WATASU_MAINTENANCE_INTERVAL", default_value = "15m", value_parser = parse_duration, global = true)]
    pub maintenance_interval: Duration,

    /// Purged shares keep their recipient address, file name, message and uploader's note this
    /// long, and sent or failed mails and webhook messages their record; then a sweep removes them.
    #[arg(long, env = "WATASU_RETENTION", default_value = "30d", value_parser = parse_duration, global = true)]
    pub retention: Duration,

    #[command(flatten)]
    pub storage: StorageSettings,

    /// Bearer token for `GET /metrics` (the Prometheus text format). Unset: the endpoint does not
    /// exist. At least 32 characters.
    #[arg(long, env = "WATASU_METRICS_TOKEN", global = true)]
    pub metrics_token: Option<SecretString>,

    #[command(flatten)]
    pub oidc: OidcSettings,

    #[command(flatten)]
    pub scan: ScanSettings,
}

/// A setting that failed validation; its `Display` is the one line printed at start-up.
#[derive(Debug, thiserror::Error)]
#[error("invalid value for {setting}: {reason}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(setting: &'static str, reason: impl Into<String>) -> Self {
        Self { setting, reason: reason.into() }
    }
}

/// Validated settings with every default resolved.
#[derive(Clone, Debug)]
pub struct Config {
    pub settings: Settings,
    pub base_url: Url,
    /// The base URL's path: every route lives below it and every emitted URL starts with it.
    pub base_path: BasePath,
    pub database_url: String,
    /// Where stored files live.
    pub storage: Storage,
    /// Single sign-on, when configured.
    pub sso: Option<SsoConfig>,
}

/// The shortest delivery grace: time for a browser whose download was cut to come back for the
/// rest, and for a slow response from object storage to finish.
pub const DELIVERY_GRACE_MIN: Duration = Duration::from_secs(5 * 60);

impl Config {
    /// Checks what single-value parsing cannot: relations between settings.
    pub fn from_settings(settings: Settings) -> Result<Self, ConfigError> {
        check_durations(&settings)?;
        if let Some(key) = &settings.secret_key {
            SecretKey::from_hex(key.expose()).map_err(|reason| ConfigError::new("WATASU_SECRET_KEY", reason))?;
        }
        if let Some(key) = &settings.file_key {
            SecretKey::from_hex(key.expose()).map_err(|reason| ConfigError::new("WATASU_FILE_KEY", reason))?;
        }
        if let Some(key) = &settings.file_key_next {
            SecretKey::from_hex(key.expose()).map_err(|reason| ConfigError::new("WATASU_FILE_KEY_NEXT", reason))?;
        }
        settings.scan.check()?;
        check_bearer_token("WATASU_MAINTENANCE_TOKEN", settings.maintenance_token.as_ref())?;
        check_bearer_token("WATASU_METRICS_TOKEN", settings.metrics_token.as_ref())?;
        if let Some(url) = &settings.smtp_url {
            lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(url.expose()).map_err(|_| {
                ConfigError::new("WATASU_SMTP_URL", "is not an SMTP URL like smtp://host:25 or smtps://user:pass@host")
            })?;
            crate::mail::check_smtp_url(url.expose()).map_err(|reason| ConfigError::new("WATASU_SMTP_URL", reason))?;
        }
        let base_url = match &settings.base_url {
            Some(url) => url.clone(),
            None => Url::parse(&format!("http://{}/", settings.listen))
                .map_err(|e| ConfigError::new("WATASU_BASE_URL", e.to_string()))?,
        };
        let base_path = BasePath::from_url(&base_url).map_err(|reason| ConfigError::new("WATASU_BASE_URL", reason))?;
        let database_url = database_url(&settings)?;
        let storage = settings.storage.storage(&settings.data_dir)?;
        let sso = settings.oidc.resolve(&base_url)?;
        Ok(Self { settings, base_url, base_path, database_url, storage, sso })
    }

    /// Connections one client may hold at once: the setting, or the default share of the cap.
    pub fn per_client_connections(&self) -> u32 {
        let settings = &self.settings;
        settings
            .max_connections_per_client
            .unwrap_or_else(|| crate::server::default_per_client(settings.max_connections))
    }

    /// True when people reach the app over TLS: cookies get `Secure` and `__Host-`, pages get HSTS.
    pub fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// The origin browsers send in `Origin` for this app, like `https://files.example.com`.
    pub fn origin(&self) -> String {
        self.base_url.origin().ascii_serialization()
    }

    /// Where the mails come from: the From mailbox and the domain of their Message-IDs.
    pub fn mail_origin(&self) -> crate::mail::origin::MailOrigin {
        crate::mail::origin::MailOrigin::new(self.settings.mail_from.clone(), &self.base_url)
    }

    /// An absolute link to a path of this app.
    pub fn url_for(&self, path: &str) -> String {
        format!("{}{}", self.base_url.as_str().trim_end_matches('/'), path)
    }
}
