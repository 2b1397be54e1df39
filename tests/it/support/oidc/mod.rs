//! A real OpenID provider next to the app: panva's oidc-provider running our `provider.mjs` as a
//! child process, stopped by its PID. It binds a free port itself and prints its issuer; the app
//! is started with that issuer, then hands the provider its redirect URI. [`drive`] walks the
//! provider's login and consent pages over HTTP as a browser would.

use std::{
    io::BufRead,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use super::{Backend, Browser, TestApp};

pub const CLIENT_ID: &str = "watasu-tests";
pub const CLIENT_SECRET: &str = "a client secret only the tests know";
/// Node starts the provider in about a second; a busy machine may take many times that.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The provider's folder (`node_modules/oidc-provider` inside): `WATASU_OIDC_PROVIDER`, else the
/// newest one `scripts/test` installed in the user's cache. Missing fails with the way to install.
fn install_dir() -> PathBuf {
    if let Some(path) = std::env::var_os("WATASU_OIDC_PROVIDER") {
        return path.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    let mut found: Vec<PathBuf> = cache
        .and_then(|c| std::fs::read_dir(c.join("watasu")).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("oidc-provider-"))
        .map(|e| e.path())
        .filter(|p| p.join("node_modules/oidc-provider/package.json").exists())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!("oidc-provider is not installed: run scripts/test (it installs it) or set WATASU_OIDC_PROVIDER")
    })
}

/// How the provider spoils its ID tokens (`OIDC_MODE` of provider.mjs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    WrongAudience,
    WrongIssuer,
    WrongNonce,
    Expired,
    FromTheFuture,
    BadSignature,
    WithinSkew,
    StringEmailVerified,
}

impl Mode {
    fn code(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::WrongAudience => "wrong-audience",
            Self::WrongIssuer => "wrong-issuer",
            Self::WrongNonce => "wrong-nonce",
            Self::Expired => "expired",
            Self::FromTheFuture => "from-the-future",
            Self::BadSignature => "bad-signature",
            Self::WithinSkew => "within-skew",
            Self::StringEmailVerified => "string-email-verified",
        }
    }
}

pub struct OidcProvider {
    child: Option<Child>,
    pub addr: String,
    log: tempfile::NamedTempFile,
}

impl OidcProvider {
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts the provider; returns once it listens (it prints its address then).
    pub fn start(mode: Mode) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/oidc/provider.mjs");
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new("node")
            .arg(&script)
            .env("WATASU_OIDC_PROVIDER", install_dir())
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_MODE", mode.code())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("starting node (scripts/test installs it)");
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (first_line, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = first_line.send(line);
            // Its later notices must find a reader, or node dies writing them.
            std::io::copy(&mut stdout, &mut std::io::sink())
        });
        // A provider that neither listens nor exits fails the test instead of hanging the run.
        let line = read.recv_timeout(START_TIMEOUT).unwrap_or_default();
        let Some(issuer) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            panic!("oidc-provider did not start: {line} {}", std::fs::read_to_string(log.path()).unwrap_or_default());
        };
        Self { addr: issuer.to_owned(), child: Some(child), log }
    }

    /// Registers the app's redirect URI, which builds the provider proper.
    pub async fn register(&self, redirect_uri: &str) {
        let answer = reqwest::Client::builder()
            .timeout(START_TIMEOUT)
            .build()
            .unwrap()
            .post(format!("{}/test/redirect-uri", self.issuer()))
            .body(redirect_uri.to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 204, "{}", self.output());
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Stops the provider (by its PID) and waits for it to end.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An app configured for single sign-on with a provider in `mode`, and that provider running.
pub async fn app_with_provider(backend: Backend, mode: Mode, allowed_domains: &[&str]) -> (TestApp, OidcProvider) {
    let provider = tokio::task::spawn_blocking(move || OidcProvider::start(mode)).await.unwrap();
    let issuer = provider.issuer();
    let domains: Vec<String> = allowed_domains.iter().map(|d| d.to_string()).collect();
    let app = TestApp::spawn_with(backend, |s| {
        s.oidc.issuer = Some(issuer);
        s.oidc.client_id = Some(CLIENT_ID.to_owned());
        s.oidc.client_secret = Some(watasu::secret::SecretString::new(CLIENT_SECRET));
        s.oidc.name = "Test IdP".to_owned();
        s.oidc.allowed_domains = domains;
    })
    .await;
    let redirect_uri = &app.state.config.sso.as_ref().expect("single sign-on configured").redirect_uri;
    provider.register(redirect_uri).await;
    (app, provider)
}

/// What the person does at the provider.
#[derive(Clone, Copy)]
pub enum Consent {
    Allow,
    Deny,
}

/// Starts a single sign-on in `browser` and walks the provider's pages as `login`, answering the
/// consent page; returns the app-relative callback path (with its query) the provider sent the
/// browser back to, not yet visited.
pub async fn drive(browser: &Browser, login: &str, consent: Consent) -> String {
    let start = browser.get("/login/sso").await;
    assert_eq!(start.status, 303, "GET /login/sso: {}", start.body);
    let mut location = start.header("location").unwrap().to_owned();
    // The provider's own cookies, as the same browser would keep them.
    let provider = Browser::new("");
    for _ in 0..20 {
        if location.starts_with(&browser.base) {
            return location[browser.base.len()..].to_owned();
        }
        let page = provider.get(&location).await;
        if page.status == 200 {
            let origin = location.split('/').take(3).collect::<Vec<_>>().join("/");
            let action = match (page.attr("form[data-prompt=login]", "action"), consent) {
                (Some(action), _) => {
                    let answer = provider.post_form(&format!("{origin}{action}"), &[("login", login)]).await;
                    location = answer.header("location").expect("the login form redirects").to_owned();
                    continue;
                }
                (None, Consent::Allow) => page.attr("form[data-prompt=consent]", "action").expect("a consent form"),
                (None, Consent::Deny) => page.attr("form[action$=abort]", "action").expect("a deny form"),
            };
            let answer = provider.post_form(&format!("{origin}{action}"), &[]).await;
            location = answer.header("location").expect("the consent form redirects").to_owned();
            continue;
        }
        assert!(page.status.is_redirection(), "the provider answered {}: {}", page.status, page.body);
        let next = page.header("location").unwrap();
        location = if next.starts_with('/') {
            let origin = location.split('/').take(3).collect::<Vec<_>>().join("/");
            format!("{origin}{next}")
        } else {
            next.to_owned()
        };
    }
    panic!("the provider never sent the browser back (last at {location})");
}
