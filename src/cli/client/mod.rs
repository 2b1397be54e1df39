//! The client side of the binary: `watasu send` and `watasu status` talk to a watasu server over
//! HTTP with a personal API token, as another system would. They read none of this host's
//! settings (no database, no data folder, no key): `main` runs them before the settings are
//! checked.

pub mod send;
pub mod status;
mod tus;

use std::{path::PathBuf, time::Duration};

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use tokio::time::Instant;
use url::Url;

use crate::secret::SecretString;

/// The environment variable holding the token (never a flag: a flag shows in `ps`).
pub const TOKEN_VARIABLE: &str = "WATASU_TOKEN";

/// The exit code of `status --wait` when its time ran out before every recipient got there.
pub const EXIT_TIMED_OUT: u8 = 3;

/// How long the server may take to accept a connection.
const CONNECT: Duration = Duration::from_secs(30);

/// How long the server may stay silent (no answer, and no byte of a piece taken) before a call
/// counts as lost: the minute a proxy in front of it (nginx's `proxy_read_timeout`) gives it too.
/// A server that accepts and never answers ends the command instead of hanging a CI job.
const SILENCE: Duration = Duration::from_secs(60);

/// A failure that ends the command with its own exit code (not 1), printed as one line.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

/// Where the server is and who the client is there.
pub struct Server {
    /// The server's address, ending in `/` so paths join below it (also below a base path).
    base: Url,
    token: SecretString,
    http: reqwest::Client,
}

/// The token of `--token-file`, else of `WATASU_TOKEN`.
pub fn token(token_file: Option<&PathBuf>) -> anyhow::Result<SecretString> {
    let text = match token_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| super::usage(format!("cannot read the token file {}: {e}", path.display())))?,
        None => std::env::var(TOKEN_VARIABLE).unwrap_or_default(),
    };
    let token = text.trim();
    if token.is_empty() {
        return Err(super::usage(format!("no API token: set {TOKEN_VARIABLE} or pass --token-file PATH")));
    }
    Ok(SecretString::new(token))
}

/// Whether `--server` is this machine (`localhost`, 127.0.0.0/8 or ::1): plain http to it crosses
/// no network, so the token cannot be read on the way.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl Server {
    /// The server at `url`. Plain http is refused off this machine unless `allow_insecure_http`:
    /// every call carries the token, which anyone on the way could read and use.
    pub fn new(url: &str, token: SecretString, allow_insecure_http: bool) -> anyhow::Result<Self> {
        let mut base = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| super::usage(format!("--server {url} is not an http or https URL")))?;
        if base.scheme() == "http" && !is_loopback(&base) && !allow_insecure_http {
            return Err(super::usage(format!(
                "--server {url} is plain http to another machine, so the API token would cross the network \
                 unencrypted: use https:// (or --allow-insecure-http to send it unencrypted anyway)"
            )));
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .user_agent(concat!("watasu/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { base, token, http })
    }

    /// `path` (relative, or absolute as a `Location` header gives it) on this server.
    fn url(&self, path: &str) -> anyhow::Result<Url> {
        Ok(self.base.join(path)?)
    }

    /// A request carrying the token, answered in full within [`SILENCE`].
    fn request(&self, method: Method, url: Url) -> RequestBuilder {
        self.streaming(method, url).timeout(SILENCE)
    }

    /// A request carrying the token whose body may take longer than [`SILENCE`] to send: its
    /// caller gives up on the server's silence itself.
    fn streaming(&self, method: Method, url: Url) -> RequestBuilder {
        self.http.request(method, url).bearer_auth(self.token.expose())
    }

    /// Sends a JSON API call (`path` below `/api/v1/`) and answers its JSON body.
    async fn api(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<serde_json::Value, Failure> {
        let url = self.url(&format!("api/v1/{path}")).map_err(|e| Failure::Unreachable(e.to_string()))?;
        let mut request = self.request(method, url).header("Accept", "application/json");
        if let Some(body) = body {
            request = request.header("Content-Type", "application/json").body(body.to_string());
        }
        let response = request.send().await.map_err(Failure::lost)?;
        let response = Failure::check(response).await?;
        let bytes = response.bytes().await.map_err(Failure::lost)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Failure::Unreachable(format!("the server's answer is not JSON: {e}")))
    }

    /// Checks the token before any byte is sent: it works here and holds `scope`.
    async fn check_token(&self, scope: &str) -> anyhow::Result<()> {
        let me = self.api(Method::GET, "me", None).await?;
        let holds = me["scopes"].as_array().is_some_and(|scopes| scopes.iter().any(|s| s == scope));
        if !holds {
            anyhow::bail!("the token lacks the scope {scope}: make one that has it on /account");
        }
        Ok(())
    }
}

/// Why a call to the server did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// No answer: the connection failed or broke.
    #[error("{0}")]
    Unreachable(String),
    /// The server answered with an error status.
    #[error("{message}")]
    Refused { status: StatusCode, message: String, retry_after: Option<Duration> },
    /// Something another try would not change: the file could not be read, or the server's
    /// answer lacks what the protocol promises.
    #[error("{0}")]
    Unexpected(String),
}

impl Failure {
    fn lost(error: reqwest::Error) -> Self {
        if error.is_timeout() {
            return if error.is_connect() {
                Self::Unreachable(format!("could not connect to the server within {} s", CONNECT.as_secs()))
            } else {
                Self::silent()
            };
        }
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text = format!("{text}: {cause}");
            source = cause.source();
        }
        Self::Unreachable(text)
    }

    /// The server stayed silent for [`SILENCE`].
    fn silent() -> Self {
        Self::Unreachable(format!("the server gave no answer within {} s", SILENCE.as_secs()))
    }

    /// `response` when it is a success, else the refusal it says, in words for the person:
    /// a problem document's title and detail, a plain-text reason, or the status.
    async fn check(response: Response) -> Result<Response, Self> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after =
            response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok()).map(Duration::from_secs);
        let problem = response.headers().get("content-type").is_some_and(|v| v.as_bytes().ends_with(b"json"));
        let body = response.text().await.unwrap_or_default();
        let said = match serde_json::from_str::<serde_json::Value>(&body) {
            Ok(doc) if problem => match (doc["title"].as_str(), doc["detail"].as_str()) {
                (Some(title), Some(detail)) => format!("{title}: {detail}"),
                (title, detail) => title.or(detail).unwrap_or_default().to_owned(),
            },
            _ => body.lines().next().unwrap_or_default().chars().take(200).collect(),
        };
        let message = match status {
            StatusCode::UNAUTHORIZED => {
                "the server refused the token (401): it is wrong, expired or revoked".to_owned()
            }
            _ if said.is_empty() => format!("the server answered {status}"),
            _ => format!("{said} ({})", status.as_u16()),
        };
        Err(Self::Refused { status, message, retry_after })
    }

    /// Whether trying again later may succeed: no answer, the server failing or busy, a limit.
    /// Not a full store (507): that waits for a person.
    fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable(_) => true,
            Self::Unexpected(_) => false,
            Self::Refused { status, .. } => {
                (status.is_server_error() && *status != StatusCode::INSUFFICIENT_STORAGE)
                    || matches!(
                        *status,
                        StatusCode::TOO_MANY_REQUESTS | StatusCode::LOCKED | StatusCode::REQUEST_TIMEOUT
                    )
            }
        }
    }
}

/// How long to keep trying when the server is away: waits of 1 s doubling to 30 s (or as long as
/// the server asked), until [`Patience::GIVE_UP`] has passed since it last answered, counting the
/// tries themselves (a restart or a deploy passes; an outage ends the command).
pub struct Patience {
    failures: u32,
    /// When the server stopped answering: the first failure since its last answer.
    away_since: Option<Instant>,
}

impl Patience {
    const FIRST: Duration = Duration::from_secs(1);
    const LONGEST: Duration = Duration::from_secs(30);
    const GIVE_UP: Duration = Duration::from_secs(600);

    pub fn new() -> Self {
        Self { failures: 0, away_since: None }
    }

    /// The server answered: the next failure waits the shortest time again.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Waits after `failure`, or answers it when it is not worth another try or the patience is
    /// used up.
    pub async fn wait(&mut self, failure: Failure, what: &str) -> Result<(), Failure> {
        if !failure.is_transient() {
            return Err(failure);
        }
        let Some(wait) = self.next_wait(&failure, Instant::now()) else {
            let minutes = Self::GIVE_UP.as_secs() / 60;
            return Err(Failure::Unreachable(format!("{failure}; gave up after {minutes} minutes of trying")));
        };
        // Said also in a CI job's log: a wait there is not a hang.
        let fresh_line = if std::io::IsTerminal::is_terminal(&std::io::stderr()) { "\n" } else { "" };
        eprintln!("{fresh_line}watasu: {what}: {failure}; trying again in {}s", wait.as_secs());
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// The wait before the next try after a failure at `now`, never past the patience (a
    /// `Retry-After` of a day is not waited out); `None` once the patience is used up.
    fn next_wait(&mut self, failure: &Failure, now: Instant) -> Option<Duration> {
        let away = now.saturating_duration_since(*self.away_since.get_or_insert(now));
        let left = Self::GIVE_UP.checked_sub(away).filter(|left| !left.is_zero())?;
        let asked = match failure {
            Failure::Refused { retry_after: Some(wait), .. } => Some(*wait),
            _ => None,
        };
        let wait = asked.unwrap_or_else(|| crate::retry::backoff(Self::FIRST, self.failures, Self::LONGEST));
        self.failures += 1;
        Some(wait.min(left))
    }
}

impl Default for Patience {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_below_the_servers_base_path() {
        let server = Server::new("https://files.example.com/watasu", SecretString::new("wts_x"), false).unwrap();
        assert_eq!(server.url("api/v1/me").unwrap().as_str(), "https://files.example.com/watasu/api/v1/me");
        assert_eq!(server.url("/watasu/uploads/ab").unwrap().as_str(), "https://files.example.com/watasu/uploads/ab");
    }

    #[test]
    fn plain_http_is_refused_off_this_machine_unless_the_flag_allows_it() {
        let new = |url: &str, allow: bool| Server::new(url, SecretString::new("wts_x"), allow);
        for url in [
            "http://127.0.0.1:8080",
            "http://127.255.255.254/",
            "http://[::1]:9/",
            "http://localhost:3000",
            "http://LocalHost/",
        ] {
            assert!(new(url, false).is_ok(), "{url}");
        }
        for url in [
            "http://example.test",
            "http://128.0.0.1/",
            "http://126.255.255.255/",
            "http://[::2]/",
            "http://localhost.example.test/",
            "http://10.0.0.1/",
        ] {
            let error = new(url, false).err().unwrap_or_else(|| panic!("{url} was let through"));
            let usage = error.downcast_ref::<crate::cli::UsageError>().expect("a usage error");
            assert!(usage.0.contains("unencrypted: use https://"), "{}", usage.0);
            assert!(new(url, true).is_ok(), "{url} with the flag");
        }
        assert!(new("https://files.example.com", false).is_ok());
    }

    #[test]
    fn a_server_failing_or_busy_is_tried_again_and_a_refusal_is_not() {
        let refused = |status: u16| Failure::Refused {
            status: StatusCode::from_u16(status).unwrap(),
            message: String::new(),
            retry_after: None,
        };
        assert!(Failure::Unreachable("reset".into()).is_transient());
        assert!([500, 502, 503, 423, 429].into_iter().all(|s| refused(s).is_transient()));
        assert!([400, 401, 403, 404, 409, 413, 422, 507].into_iter().all(|s| !refused(s).is_transient()));
    }

    #[test]
    fn patience_ends_ten_minutes_after_the_server_went_away_however_long_each_try_took() {
        let lost = Failure::Unreachable("no answer".into());
        let mut patience = Patience::new();
        let away = Instant::now();
        assert_eq!(patience.next_wait(&lost, away), Some(Duration::from_secs(1)));
        assert_eq!(patience.next_wait(&lost, away + Duration::from_secs(61)), Some(Duration::from_secs(2)));
        let busy = Failure::Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: String::new(),
            retry_after: Some(Duration::from_secs(86_400)),
        };
        let asked_a_day = patience.next_wait(&busy, away + Duration::from_secs(500));
        assert_eq!(asked_a_day, Some(Duration::from_secs(100)), "never waits past the patience");
        assert_eq!(patience.next_wait(&lost, away + Patience::GIVE_UP), None);

        patience.reset();
        let back = away + Duration::from_secs(700);
        assert_eq!(patience.next_wait(&lost, back), Some(Duration::from_secs(1)), "an answer restores it");
    }
}
