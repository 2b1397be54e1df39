//! A real headless Chromium driven over WebDriver: one chromedriver per test process (started on
//! first use, on a free 127.0.0.1 port, stopped by a watchdog when the test process ends) and one
//! fresh Chromium profile per [`BrowserSession`].
//!
//! The helpers panic with the selector, the page's URL and a screenshot path on failure, so a
//! test reads as a list of steps. A missing Chromium or chromedriver fails the test with the
//! command that installs them: it is never skipped.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use base64::Engine;
use fantoccini::{Client, ClientBuilder, wd::WebDriverCompatibleCommand};
use serde_json::{Value, json};

mod actions;
mod driver;
mod options;
mod pages;

pub use options::{BrowserOptions, Viewport};

use driver::driver;

/// How long the helpers wait for an element by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The flags every Chromium gets. The background-networking ones matter: on a closed network
/// Chromium's own connections (updates, sync, field trials) are refused and slow everything down.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];
/// One real browser with its own empty profile (cookies, storage, cache).
pub struct BrowserSession {
    client: Client,
    profile: PathBuf,
    options: BrowserOptions,
    /// The page states axe-core has checked (see `pages`).
    checked_pages: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl BrowserSession {
    /// Starts a new Chromium through the shared chromedriver.
    pub async fn start(options: BrowserOptions) -> Self {
        let driver = tokio::task::spawn_blocking(driver).await.expect("starting chromedriver");
        let profile = driver.new_profile_dir();
        let (width, height) = options.viewport.size();
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push(format!("--window-size={width},{height}"));
        let first_language = options.language.split(',').next().unwrap_or("ja").trim();
        args.push(format!("--lang={first_language}"));

        let mut prefs = serde_json::Map::new();
        prefs.insert("intl.accept_languages".into(), json!(options.language));
        if let Some(dir) = &options.download_dir {
            std::fs::create_dir_all(dir).expect("creating the download directory");
            prefs.insert("download.default_directory".into(), json!(dir));
            prefs.insert("download.prompt_for_download".into(), json!(false));
            prefs.insert("download.directory_upgrade".into(), json!(true));
            prefs.insert("safebrowsing.enabled".into(), json!(false));
        }

        let chrome_options = json!({
            "binary": driver.chromium,
            "args": args,
            "prefs": prefs,
        });
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert("goog:chromeOptions".into(), chrome_options);
        // Console messages (CSP violations among them) for `browser_log`.
        capabilities.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));

        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver.url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver at {} could not start Chromium ({}): {e}\n\
                     chromedriver's log: {}",
                    driver.url,
                    driver.chromium.display(),
                    driver.log.display()
                )
            });
        let session = Self { client, profile, options, checked_pages: Default::default() };
        if session.options.viewport.is_phone() {
            session.emulate_phone(width, height).await;
        } else {
            session.fit_viewport(width, height).await;
        }
        if !session.options.javascript {
            // Through DevTools rather than a profile setting, so that the axe-core check can switch
            // scripts on for a moment (see `pages`): with scripts off by setting, no timer fires.
            session.set_scripts_disabled(true).await;
        }
        if let Some(dir) = session.options.download_dir.clone() {
            // Headless Chromium honours the prefs, but say it over CDP too so a download never
            // waits on a prompt nobody can see.
            session
                .cdp(
                    "Browser.setDownloadBehavior",
                    json!({ "behavior": "allow", "downloadPath": dir, "eventsEnabled": false }),
                )
                .await;
        }
        session
    }

    /// Chromium keeps windows at least 500 px wide: a phone is emulated instead (viewport, device
    /// pixels and touch, as Chrome's device toolbar does). Through DevTools rather than
    /// chromedriver's `mobileEmulation`: that turns every WebDriver click into touch events, and
    /// with scripts switched off through DevTools such a tap never completes, so the click hangs.
    async fn emulate_phone(&self, width: u32, height: u32) {
        let metrics = json!({ "width": width, "height": height, "deviceScaleFactor": 2, "mobile": true });
        self.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
        self.cdp("Emulation.setTouchEmulationEnabled", json!({ "enabled": true, "maxTouchPoints": 5 })).await;
    }

    /// `--window-size` sizes the window, not the page: grow the window until the page itself
    /// gets `width`×`height` CSS pixels.
    async fn fit_viewport(&self, width: u32, height: u32) {
        let inner = self.execute("return [window.innerWidth, window.innerHeight];").await;
        let inner = |i: usize| inner[i].as_u64().unwrap_or(0) as u32;
        if (inner(0), inner(1)) != (width, height) {
            let (outer_w, outer_h) = self.client.get_window_size().await.expect("window size");
            let target_w = outer_w as u32 + width - inner(0).min(width);
            let target_h = outer_h as u32 + height - inner(1).min(height);
            self.client.set_window_size(target_w, target_h).await.expect("resizing the window");
        }
    }

    /// Runs `script` as the body of a function in the page and returns what it returns
    /// (`return document.title;`). Runs under WebDriver, so the page's CSP does not stop it.
    pub async fn execute(&self, script: &str) -> Value {
        self.execute_with(script, vec![]).await
    }

    /// Like [`execute`](Self::execute), with `arguments[0]`, `arguments[1]`, … .
    pub async fn execute_with(&self, script: &str, args: Vec<Value>) -> Value {
        match self.try_execute(script, args).await {
            Ok(value) => value,
            Err(e) => self.fail(&format!("running `{script}`: {e}")).await,
        }
    }

    async fn try_execute(&self, script: &str, args: Vec<Value>) -> Result<Value, fantoccini::error::CmdError> {
        self.client.execute(script, args).await
    }

    /// Marks the current document; [`document_is_marked`](Self::document_is_marked) stays true
    /// only while no full page load replaced it (an htmx swap keeps it).
    pub async fn mark_document(&self) {
        self.execute("window.__watasuMarker = 'still-here'; return null;").await;
    }

    pub async fn document_is_marked(&self) -> bool {
        self.execute("return window.__watasuMarker === 'still-here';").await == Value::Bool(true)
    }

    /// How the current document was loaded: `navigate`, `reload`, `back_forward`, … .
    pub async fn navigation_type(&self) -> String {
        let value = self
            .execute(
                "const entries = performance.getEntriesByType('navigation'); \
                 return entries.length ? entries[0].type : null;",
            )
            .await;
        value.as_str().unwrap_or_default().to_owned()
    }

    /// The browser console since the last call (chromedriver hands each entry out once): one
    /// `(level, message)` per entry. CSP violations appear here as `SEVERE` entries.
    pub async fn browser_log(&self) -> Vec<(String, String)> {
        let value = self
            .client
            .issue_cmd(SessionCommand { path: "se/log", body: json!({ "type": "browser" }) })
            .await
            .expect("reading the browser log");
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|entry| {
                (
                    entry["level"].as_str().unwrap_or_default().to_owned(),
                    entry["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Console entries that report a Content-Security-Policy violation.
    pub async fn csp_violations(&self) -> Vec<String> {
        self.browser_log()
            .await
            .into_iter()
            .map(|(_, message)| message)
            .filter(|m| m.contains("Content Security Policy") || m.contains("Content-Security-Policy"))
            .collect()
    }

    /// Sends a Chrome DevTools Protocol command and returns its result.
    pub async fn cdp(&self, command: &str, params: Value) -> Value {
        self.client
            .issue_cmd(SessionCommand { path: "goog/cdp/execute", body: json!({ "cmd": command, "params": params }) })
            .await
            .unwrap_or_else(|e| panic!("CDP {command}: {e}"))
    }

    /// Gives the browser a passkey authenticator of its own, as a phone's screen lock would be:
    /// WebDriver's virtual authenticator (CTAP2, built in, discoverable credentials, and the
    /// person verified whenever asked).
    pub async fn add_virtual_authenticator(&self) {
        let body = json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserVerified": true,
        });
        self.client
            .issue_cmd(SessionCommand { path: "webauthn/authenticator", body })
            .await
            .expect("adding a virtual authenticator");
    }

    /// Saves what the window shows as `target/screenshots/<name>.png` and returns the path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("taking a screenshot");
        save_screenshot(name, &png)
    }

    /// Saves the whole page, beyond the window's height, as `target/screenshots/<name>.png`.
    pub async fn screenshot_full_page(&self, name: &str) -> PathBuf {
        let metrics = self.cdp("Page.getLayoutMetrics", json!({})).await;
        let size = &metrics["cssContentSize"];
        let (width, height) =
            (size["width"].as_f64().unwrap_or(1280.0).ceil(), size["height"].as_f64().unwrap_or(900.0).ceil());
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": { "x": 0, "y": 0, "width": width, "height": height, "scale": 1 },
                }),
            )
            .await;
        let data = shot["data"].as_str().expect("screenshot data");
        let png = base64::engine::general_purpose::STANDARD.decode(data).expect("screenshot data is base64");
        save_screenshot(name, &png)
    }

    /// Waits for a finished download in `dir` (no `.crdownload` left) and returns its path.
    /// With several finished files, the newest.
    pub async fn wait_for_download(&self, dir: &Path, timeout: Duration) -> PathBuf {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(file) = finished_download(dir) {
                return file;
            }
            if Instant::now() >= deadline {
                let seen: Vec<_> =
                    std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
                self.fail(&format!("no finished download in {} within {timeout:?} (there: {seen:?})", dir.display()))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Ends the session after checking the page it ends on, quits Chromium and removes its profile.
    pub async fn close(self) {
        self.check_page().await;
        self.close_without_check().await;
    }

    /// Ends the session on a page that is not ours to check (one a test broke on purpose).
    pub async fn close_without_check(self) {
        let _ = self.client.close().await;
        let _ = std::fs::remove_dir_all(&self.profile);
    }

    /// Fails the test with `message`, the current URL and a screenshot of the moment.
    async fn fail(&self, message: &str) -> ! {
        static FAILURES: AtomicUsize = AtomicUsize::new(0);
        let url = self.client.current_url().await.map(|u| u.to_string()).unwrap_or_else(|_| "?".into());
        let name = format!("failure-{}-{}", std::process::id(), FAILURES.fetch_add(1, Ordering::Relaxed));
        let shot = match self.client.screenshot().await {
            Ok(png) => save_screenshot(&name, &png).display().to_string(),
            Err(e) => format!("(no screenshot: {e})"),
        };
        panic!("{message}\n  at {url}\n  screenshot: {shot}");
    }
}

/// The newest finished file in `dir`, once nothing there is still downloading.
/// Waits until `dir` holds a finished file whose name satisfies `wanted`, and returns it.
pub async fn saved_file(dir: &Path, wanted: impl Fn(&str) -> bool) -> std::path::PathBuf {
    // Only a failure waits this long: a large archive of encrypted files in a debug build, on a
    // machine busy with other tests, can take most of it.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let found = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).find(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            wanted(&name) && !name.ends_with(".crdownload")
        });
        if let Some(path) = found {
            return path;
        }
        assert!(Instant::now() < deadline, "nothing saved in {}", dir.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn finished_download(dir: &Path) -> Option<PathBuf> {
    let mut finished = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".crdownload") || name.ends_with(".tmp") {
            return None;
        }
        if name.starts_with('.') {
            continue;
        }
        let meta = entry.metadata().ok()?;
        if meta.is_file() {
            finished.push((meta.modified().ok()?, entry.path()));
        }
    }
    finished.sort();
    finished.pop().map(|(_, path)| path)
}

fn save_screenshot(name: &str, png: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join("screenshots");
    let path = dir.join(format!("{name}.png"));
    std::fs::create_dir_all(path.parent().expect("a screenshot folder")).expect("creating a screenshot folder");
    std::fs::write(&path, png).expect("saving a screenshot");
    path
}

/// A POST to a WebDriver extension endpoint under the session (`se/log`, `goog/cdp/execute`,
/// `webauthn/authenticator`).
#[derive(Debug)]
struct SessionCommand {
    path: &'static str,
    body: Value,
}

impl WebDriverCompatibleCommand for SessionCommand {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        let session = session_id.expect("a WebDriver session");
        base_url.join(&format!("session/{session}/{}", self.path))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (poem::http::Method, Option<String>) {
        (poem::http::Method::POST, Some(self.body.to_string()))
    }
}
