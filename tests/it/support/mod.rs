//! The test harness: the real app on a random port against a fresh SQLite file or a fresh database
//! in a throwaway PostgreSQL cluster, an SMTP server that captures mail, and a cookie-keeping
//! HTTP client per simulated browser.

pub mod accounts;
pub mod authenticator;
pub mod browser;
pub mod clamd;
pub mod clock;
pub mod cut_proxy;
pub mod db;
pub mod fake_store;
pub mod http;
pub mod installation;
pub mod nginx;
pub mod oidc;
pub mod pg;
pub mod process;
pub mod raw;
pub mod recipient;
pub mod s3;
pub mod shares;
pub mod smtp;
pub mod store_proxy;
pub mod words;
pub mod wrapped_store;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use clap::Parser;
use tokio::{sync::oneshot, task::JoinHandle};
use watasu::{
    App,
    config::{Config, Settings},
    db::Db,
    lifecycle::LifecycleRepository,
    mail::Mailer,
    otp::Codes,
    ratelimit::RateLimiter,
    secret::SecretKey,
    services::Services,
    session::Sessions,
    share::{ShareAccess, ShareEvents},
    storage::SweptStore,
    web::AppState,
};

pub use accounts::PASSWORD;
pub use db::{count, execute, tables_as_text, texts};
pub use http::{Browser, Page, without_csrf};
pub use recipient::{RECIPIENT, event_kinds, without_csrf_and_typed};
pub use shares::TestShare;
pub use smtp::SmtpSink;

/// The two database backends every behaviour test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs each named test function, an ordinary `async fn name(backend: Backend)` beside the call, on
/// SQLite and on PostgreSQL: `both_backends!(name)` makes the tests `name::sqlite` and
/// `name::postgres`. The bodies stay outside the macro, where rustfmt and an editor see them.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name($crate::support::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::$name($crate::support::Backend::Postgres).await
            }
        }
    )+};
}

#[derive(Parser)]
struct TestCli {
    #[command(flatten)]
    settings: Settings,
}

/// The secret key of every test app (64 hex characters), for commands run beside it.
pub fn test_secret_key() -> String {
    "5a".repeat(32)
}

/// Settings for a test app: random port, its own data folder, mail to `smtp`.
pub fn test_settings(data_dir: &std::path::Path, database_url: &str, smtp: &SmtpSink) -> Settings {
    TestCli::parse_from([
        "watasu",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir.to_str().unwrap(),
        "--database-url",
        database_url,
        "--smtp-url",
        &smtp.url(),
        "--secret-key",
        &test_secret_key(),
        "--mail-from",
        "watasu <watasu@example.test>",
        // Every in-process test runs over encrypted files; the real binary keeps the default.
        "--encrypt-files",
    ])
    .settings
}

/// Bulk transfers (hundreds of megabytes through the real binary) share the machine with each
/// other, but never with a test that compares answer times: on two cores such a comparison would
/// measure the transfer. Bulk tests hold a read turn, timing tests the write turn.
static MACHINE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

pub async fn bulk_transfer_turn() -> tokio::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().await
}

pub async fn timing_turn() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().await
}

/// A fresh database URL for one test.
pub async fn fresh_database(backend: Backend, data_dir: &std::path::Path) -> String {
    match backend {
        Backend::Sqlite => format!("sqlite://{}?mode=rwc", data_dir.join("watasu.db").display()),
        Backend::Postgres => {
            let cluster = tokio::task::spawn_blocking(pg::shared).await.unwrap();
            cluster.create_database().await
        }
    }
}

/// The app as tests reach it: the services the server runs (its GC runner, maintenance and
/// deletion runner among them: `state.services.gc`), and repositories over the same pool, key,
/// mailer and store, wired as the services wire theirs (`Parts`), for arranging rows and
/// checking them.
pub struct TestState {
    pub services: Services,
    pub config: Config,
    pub db: Db,
    pub secret_key: SecretKey,
    pub mailer: Arc<dyn Mailer>,
    pub store: Arc<dyn SweptStore>,
    pub sessions: Sessions,
    pub shares: ShareAccess,
    pub codes: Codes,
    pub events: ShareEvents,
    pub limiter: RateLimiter,
    pub lifecycle: LifecycleRepository,
}

impl TestState {
    fn of(state: &AppState) -> Self {
        let services = state.services.clone();
        let parts = services.parts().clone();
        let db = parts.db.clone();
        Self {
            sessions: parts.sessions(),
            shares: parts.share_access(),
            codes: parts.codes(),
            events: ShareEvents::new(db.clone()),
            limiter: RateLimiter::new(db.clone()),
            lifecycle: parts.lifecycle(),
            config: state.config.clone(),
            db,
            secret_key: parts.secret_key,
            mailer: parts.mailer,
            store: parts.store,
            services,
        }
    }
}

/// A running app with everything it talks to.
pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub state: TestState,
    pub smtp: SmtpSink,
    pub data_dir: tempfile::TempDir,
    /// The first-run setup link the app printed (no account existed at start).
    pub setup_link: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Starts the app with its GC timer's next tick a day away, and returns once the start-up tick
    /// has finished (an old temp file it must sweep is gone): the app's own GC then only runs
    /// where a test makes it (after responses, unless `adjust` turns that off).
    pub async fn spawn_settled(backend: Backend, adjust: impl FnOnce(&mut Settings)) -> Self {
        const SENTINEL: &str = ".tmp-startup-tick-sentinel";
        let app = Self::spawn_with(backend, |s| {
            s.gc_interval = Duration::from_secs(24 * 3600);
            let files = s.data_dir.join("files");
            std::fs::create_dir_all(&files).unwrap();
            let sentinel = std::fs::File::create(files.join(SENTINEL)).unwrap();
            sentinel.set_modified(std::time::SystemTime::now() - Duration::from_secs(7200)).unwrap();
            adjust(s);
        })
        .await;
        let sentinel = app.data_dir.path().join("files").join(SENTINEL);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while sentinel.exists() {
            assert!(std::time::Instant::now() < deadline, "the app's start-up GC tick never finished");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        app
    }

    /// Starts the app after `adjust` changed its settings.
    pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Settings)) -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let database_url = fresh_database(backend, data_dir.path()).await;
        Self::spawn_on(data_dir, &database_url, adjust).await
    }

    /// Starts the app on a data folder and database a test prepared (an older schema with rows).
    pub async fn spawn_on(data_dir: tempfile::TempDir, database_url: &str, adjust: impl FnOnce(&mut Settings)) -> Self {
        Self::try_spawn_on(data_dir, database_url, adjust).await.expect("the app starts")
    }

    /// The same, answering why the app could not start (a test that chose its port may retry).
    pub async fn try_spawn_on(
        data_dir: tempfile::TempDir,
        database_url: &str,
        adjust: impl FnOnce(&mut Settings),
    ) -> anyhow::Result<Self> {
        let smtp = SmtpSink::start().await;
        let mut settings = test_settings(data_dir.path(), database_url, &smtp);
        adjust(&mut settings);
        let config = Config::from_settings(settings).expect("valid test settings");
        let app = App::build(config).await?;
        let addr = app.local_addr();
        let state = TestState::of(app.state());
        let setup_link = app.setup_link().map(str::to_owned);
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async move {
            let _ = rx.await;
        }));
        Ok(Self {
            addr,
            base: format!("http://{addr}"),
            state,
            smtp,
            data_dir,
            setup_link,
            shutdown: Some(tx),
            server: Some(server),
        })
    }

    pub fn db(&self) -> &Db {
        &self.state.db
    }

    /// A new browser with its own cookies, like a separate device.
    pub fn browser(&self) -> Browser {
        Browser::new(&self.base)
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl TestApp {
    /// Creates a sender account (password hashing skipped: tests do not sign in with it).
    pub async fn create_sender(&self, email: &str, name: &str) -> i64 {
        let email = watasu::accounts::EmailAddress::parse(email).unwrap();
        watasu::accounts::Users::new(self.db().clone())
            .create(
                &email,
                name,
                "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$invalid",
                watasu::accounts::Role::Sender,
                Default::default(),
            )
            .await
            .unwrap()
    }

    /// Creates a sender who can sign in with `password`.
    pub async fn create_sender_with_password(&self, email: &str, name: &str, password: &str) -> i64 {
        let hash =
            watasu::accounts::password::hash_password(watasu::secret::SecretString::new(password)).await.unwrap();
        let email = watasu::accounts::EmailAddress::parse(email).unwrap();
        watasu::accounts::Users::new(self.db().clone())
            .create(&email, name, &hash, watasu::accounts::Role::Sender, Default::default())
            .await
            .unwrap()
    }
}

/// Waits until `condition` holds, polling; panics after `timeout`.
pub async fn eventually<F: AsyncFn() -> bool>(timeout: Duration, what: &str, condition: F) {
    let deadline = std::time::Instant::now() + timeout;
    while !condition().await {
        assert!(std::time::Instant::now() < deadline, "{what} did not happen within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The address of a server that accepts connections, keeps them open and never says a word (a
/// hung relay, store or scanner); it stops when the task is aborted.
pub async fn silent_listener() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepting = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });
    (address, accepting)
}

pub fn rand_suffix() -> String {
    watasu::secret::random_token().expose()[..8].to_owned()
}
