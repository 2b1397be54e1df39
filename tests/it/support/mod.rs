//! The test harness: the real app on a random port against a fresh SQLite file or a fresh database
//! in a throwaway PostgreSQL cluster, an SMTP server that captures mail, and a cookie-keeping
//! HTTP client per simulated browser.

pub mod browser;
pub mod fake_store;
pub mod pg;
pub mod process;
pub mod raw;
pub mod smtp;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use clap::Parser;
use reqwest::{
    StatusCode,
    cookie::{CookieStore, Jar},
    header::HeaderMap,
};
use scraper::{Html, Selector};
use tokio::{sync::oneshot, task::JoinHandle};
use watasu::{
    App,
    config::{Config, Settings},
    db::Db,
    web::AppState,
};

pub use smtp::SmtpSink;

/// The two database backends every behaviour test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs one test body on SQLite and on PostgreSQL, as two separately named tests.
/// The body sees `backend: Backend`.
#[macro_export]
macro_rules! both_backends {
    ($(async fn $name:ident($backend:ident: Backend) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                let $backend = $crate::support::Backend::Sqlite;
                $body
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                let $backend = $crate::support::Backend::Postgres;
                $body
            }
        }
    )*};
}

#[derive(Parser)]
struct TestCli {
    #[command(flatten)]
    settings: Settings,
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
        &"5a".repeat(32),
        "--mail-from",
        "watasu <watasu@example.test>",
    ])
    .settings
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

/// Runs a `SELECT count(*) … WHERE … = $1` (or any single-integer query) on either backend.
pub async fn count(db: &Db, sql: &'static str, bind: i64) -> i64 {
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap(),
    }
}

/// Runs one statement (given in each dialect) with one integer parameter; returns rows affected.
pub async fn execute(db: &Db, sqlite: &'static str, postgres: &'static str, bind: i64) -> u64 {
    match db {
        Db::Sqlite(pool) => sqlx::query(sqlite).bind(bind).execute(pool).await.unwrap().rows_affected(),
        Db::Postgres(pool) => sqlx::query(postgres).bind(bind).execute(pool).await.unwrap().rows_affected(),
    }
}

/// A running app with everything it talks to.
pub struct TestApp {
    pub backend: Backend,
    pub addr: SocketAddr,
    pub base: String,
    pub state: AppState,
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
        let smtp = SmtpSink::start().await;
        let database_url = fresh_database(backend, data_dir.path()).await;
        let mut settings = test_settings(data_dir.path(), &database_url, &smtp);
        adjust(&mut settings);
        let config = Config::from_settings(settings).expect("valid test settings");
        let app = App::build(config).await.expect("the app starts");
        let addr = app.local_addr();
        let state = app.state().clone();
        let setup_link = app.setup_link().map(str::to_owned);
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async move {
            let _ = rx.await;
        }));
        Self {
            backend,
            addr,
            base: format!("http://{addr}"),
            state,
            smtp,
            data_dir,
            setup_link,
            shutdown: Some(tx),
            server: Some(server),
        }
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

/// One simulated browser: keeps its cookies, never follows redirects on its own.
pub struct Browser {
    pub client: reqwest::Client,
    pub jar: Arc<Jar>,
    pub base: String,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Browser {
    pub fn new(base: &str) -> Self {
        let jar = Arc::new(Jar::default());
        let client = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        Self { client, jar, base: base.to_owned() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> Page {
        Page::read(self.client.get(self.url(path)).send().await.unwrap()).await
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Page {
        let mut request = self.client.get(self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Page::read(request.send().await.unwrap()).await
    }

    /// Posts a form as a browser would from one of our pages (same-origin).
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.post_form_with(path, fields, &[("Sec-Fetch-Site", "same-origin")]).await
    }

    pub async fn post_form_with(&self, path: &str, fields: &[(&str, &str)], headers: &[(&str, &str)]) -> Page {
        let mut request = self.client.post(self.url(path)).form(fields);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Page::read(request.send().await.unwrap()).await
    }

    /// The value of one of this browser's cookies for the app.
    pub fn cookie(&self, name: &str) -> Option<String> {
        let url = self.base.parse().unwrap();
        let header = self.jar.cookies(&url)?;
        header.to_str().ok()?.split("; ").find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == name).then(|| value.to_owned())
        })
    }

    /// Puts a cookie into this browser, as an attacker or a stale tab might.
    pub fn set_cookie(&self, name: &str, value: &str) {
        self.jar.add_cookie_str(&format!("{name}={value}; Path=/"), &self.base.parse().unwrap());
    }
}

impl Page {
    pub async fn read(response: reqwest::Response) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap();
        Self { status, headers, body }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn html(&self) -> Html {
        Html::parse_document(&self.body)
    }

    /// Text of every element matching `selector`.
    pub fn texts(&self, selector: &str) -> Vec<String> {
        let selector = Selector::parse(selector).unwrap();
        self.html().select(&selector).map(|e| e.text().collect::<String>().trim().to_owned()).collect()
    }

    /// The attribute `attr` of the first element matching `selector`.
    pub fn attr(&self, selector: &str, attr: &str) -> Option<String> {
        let selector = Selector::parse(selector).unwrap();
        self.html().select(&selector).next().and_then(|e| e.value().attr(attr).map(str::to_owned))
    }

    /// The CSRF token of the page's first form.
    pub fn csrf_token(&self) -> String {
        self.attr("input[name=csrf_token]", "value").expect("the page has a CSRF token")
    }
}

/// A share created through the same code path as the CLI and the dashboard.
pub struct TestShare {
    pub id: i64,
    pub token: String,
    pub sender_id: i64,
}

impl TestApp {
    /// Creates a sender account (password hashing skipped: tests do not sign in with it).
    pub async fn create_sender(&self, email: &str, name: &str) -> i64 {
        let email = watasu::accounts::EmailAddress::parse(email).unwrap();
        watasu::accounts::Users::new(self.db().clone())
            .create(&email, name, "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$invalid", watasu::accounts::Role::Sender)
            .await
            .unwrap()
    }

    /// Creates a sender who can sign in with `password`.
    pub async fn create_sender_with_password(&self, email: &str, name: &str, password: &str) -> i64 {
        let hash =
            watasu::accounts::password::hash_password(watasu::secret::SecretString::new(password)).await.unwrap();
        let email = watasu::accounts::EmailAddress::parse(email).unwrap();
        watasu::accounts::Users::new(self.db().clone())
            .create(&email, name, &hash, watasu::accounts::Role::Sender)
            .await
            .unwrap()
    }

    /// Stores `content` and creates a share of it for `recipient`, valid for `ttl`.
    pub async fn create_share_with(
        &self,
        sender_id: i64,
        recipient: &str,
        file_name: &str,
        content: &'static [u8],
        ttl: Duration,
    ) -> TestShare {
        let request = watasu::share::create::ShareRequest {
            sender_id,
            recipient: watasu::accounts::EmailAddress::parse(recipient).unwrap(),
            file_name,
            content_type: "application/octet-stream",
            content: Box::pin(content),
            max_bytes: u64::MAX,
            ttl,
            message: watasu::share::Message::parse("Here is the file.").unwrap(),
            lang: watasu::i18n::Lang::En,
            notify_on_download: true,
        };
        let issued = watasu::share::create::create_share(&self.state.shares.links, self.state.store.as_ref(), request)
            .await
            .unwrap();
        TestShare { id: issued.share_id, token: issued.token.expose().to_owned(), sender_id }
    }

    /// A new browser signed in as `email`.
    pub async fn sign_in(&self, email: &str, password: &str) -> Browser {
        let browser = self.browser();
        let form = browser.get("/login").await;
        let answer = browser
            .post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", email), ("password", password)])
            .await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        browser
    }

    /// A one-hour share of a small text file from a fresh sender to recipient@example.test.
    pub async fn create_share(&self) -> TestShare {
        let sender = self.create_sender(&format!("sender-{}@example.test", rand_suffix()), "Sender Sato").await;
        self.create_share_with(
            sender,
            "Recipient@Example.test",
            "report.txt",
            b"the file contents\n",
            Duration::from_secs(3600),
        )
        .await
    }

    /// Makes every recorded rate-limit attempt `seconds` older, by the database's clock.
    pub async fn age_rate_limits(&self, seconds: i64) {
        execute(
            self.db(),
            "UPDATE rate_limit_hits SET at = at - $1",
            "UPDATE rate_limit_hits SET at = at - make_interval(secs => $1)",
            seconds,
        )
        .await;
    }

    /// Moves a share's expiry into the past, by the database's clock.
    pub async fn expire_share(&self, share_id: i64) {
        execute(
            self.db(),
            "UPDATE shares SET expires_at = unixepoch('subsec') - 1 WHERE id = $1",
            "UPDATE shares SET expires_at = now() - interval '1 second' WHERE id = $1",
            share_id,
        )
        .await;
    }
}

fn rand_suffix() -> String {
    watasu::secret::random_token().expose()[..8].to_owned()
}

/// Every row of every table as text, per table; byte columns decoded as UTF-8.
pub async fn tables_as_text(db: &Db) -> Vec<(String, String)> {
    use sqlx::Row;
    let mut out = Vec::new();
    match db {
        Db::Sqlite(pool) => {
            let tables: Vec<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
                .fetch_all(pool)
                .await
                .unwrap();
            for table in tables {
                let mut text = String::new();
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM \"{table}\"")))
                    .fetch_all(pool)
                    .await
                    .unwrap();
                for row in rows {
                    for i in 0..row.columns().len() {
                        if let Ok(Some(value)) = row.try_get::<Option<String>, _>(i) {
                            text.push_str(&value);
                        } else if let Ok(Some(bytes)) = row.try_get::<Option<Vec<u8>>, _>(i) {
                            text.push_str(&String::from_utf8_lossy(&bytes));
                        }
                        text.push('|');
                    }
                    text.push('\n');
                }
                out.push((table, text));
            }
        }
        Db::Postgres(pool) => {
            let tables: Vec<String> =
                sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
                    .fetch_all(pool)
                    .await
                    .unwrap();
            for table in tables {
                let sql = format!("SELECT t::text FROM \"{table}\" t");
                let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.unwrap();
                let mut text = rows.join("\n");
                // A row's text shows byte columns as hex: decode them too.
                let bytea: Vec<String> = sqlx::query_scalar(
                    "SELECT column_name::text FROM information_schema.columns
                      WHERE table_schema = 'public' AND table_name = $1 AND data_type = 'bytea'",
                )
                .bind(&table)
                .fetch_all(pool)
                .await
                .unwrap();
                for column in bytea {
                    let sql = format!("SELECT \"{column}\" FROM \"{table}\" WHERE \"{column}\" IS NOT NULL");
                    for bytes in
                        sqlx::query_scalar::<_, Vec<u8>>(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.unwrap()
                    {
                        text.push('\n');
                        text.push_str(&String::from_utf8_lossy(&bytes));
                    }
                }
                out.push((table, text));
            }
        }
    }
    out
}
