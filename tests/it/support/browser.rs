//! A real headless Chromium driven over WebDriver: one chromedriver per test process (started on
//! first use, on a free 127.0.0.1 port, stopped by a watchdog when the test process ends) and one
//! fresh Chromium profile per [`BrowserSession`].
//!
//! The helpers panic with the selector, the page's URL and a screenshot path on failure, so a
//! test reads as a list of steps. A missing Chromium or chromedriver fails the test with the
//! command that installs them: it is never skipped.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator, elements::Element, wd::WebDriverCompatibleCommand};
use serde_json::{Value, json};

const INSTALL_HINT: &str = "apt-get install chromium chromium-driver";

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

/// The window (and so the viewport) of a browser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewport {
    /// 1280×900.
    Desktop,
    /// 390×844 CSS pixels at 2 device pixels each, with touch: a common phone.
    Phone,
    Custom {
        width: u32,
        height: u32,
    },
}

impl Viewport {
    /// Narrower than Chromium's smallest window (500 px): emulated as a phone.
    pub fn is_phone(self) -> bool {
        self.size().0 < 500
    }

    /// The size of the page's viewport (`innerWidth`×`innerHeight`) in CSS pixels.
    pub fn size(self) -> (u32, u32) {
        match self {
            Viewport::Desktop => (1280, 900),
            Viewport::Phone => (390, 844),
            Viewport::Custom { width, height } => (width, height),
        }
    }
}

/// How to start a [`BrowserSession`].
#[derive(Clone, Debug)]
pub struct BrowserOptions {
    /// JavaScript on (the default) or off, as a visitor who blocks scripts.
    pub javascript: bool,
    pub viewport: Viewport,
    /// Where downloads land, without asking. `None`: Chromium's default (a download may prompt).
    pub download_dir: Option<PathBuf>,
    /// The browser's language: its `Accept-Language` and `navigator.language`. Default `ja`.
    pub language: String,
}

impl Default for BrowserOptions {
    fn default() -> Self {
        Self { javascript: true, viewport: Viewport::Desktop, download_dir: None, language: "ja".to_owned() }
    }
}

impl BrowserOptions {
    /// A desktop browser, JavaScript on, Japanese.
    pub fn desktop() -> Self {
        Self::default()
    }

    /// A phone-sized browser, JavaScript on, Japanese.
    pub fn phone() -> Self {
        Self { viewport: Viewport::Phone, ..Self::default() }
    }

    pub fn without_javascript(mut self) -> Self {
        self.javascript = false;
        self
    }

    pub fn viewport(mut self, viewport: Viewport) -> Self {
        self.viewport = viewport;
        self
    }

    pub fn downloads_to(mut self, dir: impl Into<PathBuf>) -> Self {
        self.download_dir = Some(dir.into());
        self
    }

    /// An `Accept-Language`-style list, e.g. `en` or `en-US,en`.
    pub fn language(mut self, language: &str) -> Self {
        self.language = language.to_owned();
        self
    }
}

/// One real browser with its own empty profile (cookies, storage, cache).
pub struct BrowserSession {
    client: Client,
    profile: PathBuf,
    options: BrowserOptions,
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
        if !options.javascript {
            prefs.insert("profile.managed_default_content_settings.javascript".into(), json!(2));
        }
        if let Some(dir) = &options.download_dir {
            std::fs::create_dir_all(dir).expect("creating the download directory");
            prefs.insert("download.default_directory".into(), json!(dir));
            prefs.insert("download.prompt_for_download".into(), json!(false));
            prefs.insert("download.directory_upgrade".into(), json!(true));
            prefs.insert("safebrowsing.enabled".into(), json!(false));
        }

        let mut chrome_options = json!({
            "binary": driver.chromium,
            "args": args,
            "prefs": prefs,
        });
        if options.viewport.is_phone() {
            // Chromium keeps windows at least 500 px wide: a phone is emulated instead (viewport,
            // device pixels, touch and `pointer: coarse`, as Chrome's device toolbar does).
            chrome_options["mobileEmulation"] = json!({
                "deviceMetrics": {
                    "width": width, "height": height, "pixelRatio": 2.0, "mobile": true, "touch": true,
                },
            });
        }
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
        let session = Self { client, profile, options };
        if !session.options.viewport.is_phone() {
            session.fit_viewport(width, height).await;
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

    /// The underlying WebDriver client, for anything the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn options(&self) -> &BrowserOptions {
        &self.options
    }

    /// Opens `url` and waits for its load event.
    pub async fn goto(&self, url: &str) {
        if let Err(e) = self.client.goto(url).await {
            self.fail(&format!("opening {url}: {e}")).await;
        }
    }

    /// Reloads the page and waits for its load event.
    pub async fn reload(&self) {
        if let Err(e) = self.client.refresh().await {
            self.fail(&format!("reloading: {e}")).await;
        }
    }

    pub async fn back(&self) {
        if let Err(e) = self.client.back().await {
            self.fail(&format!("going back: {e}")).await;
        }
    }

    pub async fn current_url(&self) -> url::Url {
        self.client.current_url().await.expect("reading the URL")
    }

    /// The path and query of the current page (`/shares/3?lang=en`).
    pub async fn current_path(&self) -> String {
        let url = self.current_url().await;
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    pub async fn title(&self) -> String {
        self.client.title().await.expect("reading the title")
    }

    /// The page's HTML as the browser has it now (after any scripts ran).
    pub async fn source(&self) -> String {
        self.client.source().await.expect("reading the page source")
    }

    /// The first element matching `css`, which must be there now.
    pub async fn find(&self, css: &str) -> Element {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element,
            Err(e) => self.fail(&format!("no element matches `{css}`: {e}")).await,
        }
    }

    /// Every element matching `css` (possibly none).
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        match self.client.find_all(Locator::Css(css)).await {
            Ok(elements) => elements,
            Err(e) => self.fail(&format!("finding `{css}`: {e}")).await,
        }
    }

    /// Whether an element matches `css` now.
    pub async fn exists(&self, css: &str) -> bool {
        !self.find_all(css).await.is_empty()
    }

    /// Replaces the value of the field matching `css` by typing `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        let element = self.wait_for(css, DEFAULT_WAIT).await;
        if let Err(e) = element.clear().await {
            self.fail(&format!("clearing `{css}`: {e}")).await;
        }
        if let Err(e) = element.send_keys(text).await {
            self.fail(&format!("typing into `{css}`: {e}")).await;
        }
    }

    /// Clicks the element matching `css` (waiting for it to appear first). A click that starts
    /// a navigation returns once chromedriver saw it begin: wait for something on the next page.
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css, DEFAULT_WAIT).await;
        if let Err(e) = element.click().await {
            self.fail(&format!("clicking `{css}`: {e}")).await;
        }
    }

    /// The rendered text of the first element matching `css` (as a user sees it: hidden text is
    /// left out), trimmed.
    pub async fn text(&self, css: &str) -> String {
        let element = self.wait_for(css, DEFAULT_WAIT).await;
        match element.text().await {
            Ok(text) => text.trim().to_owned(),
            Err(e) => self.fail(&format!("reading the text of `{css}`: {e}")).await,
        }
    }

    /// The attribute `name` of the first element matching `css`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.wait_for(css, DEFAULT_WAIT).await;
        match element.attr(name).await {
            Ok(value) => value,
            Err(e) => self.fail(&format!("reading `{name}` of `{css}`: {e}")).await,
        }
    }

    /// Waits until an element matches `css` and returns it.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> Element {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await {
                return element;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("no element matched `{css}` within {timeout:?}")).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until no element matches `css`.
    pub async fn wait_for_gone(&self, css: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.exists(css).await {
            if Instant::now() >= deadline {
                self.fail(&format!("`{css}` was still there after {timeout:?}")).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `condition` holds, checking every 50 ms; `what` names it in the failure.
    ///
    /// ```ignore
    /// browser.wait_until("the switch to English", DEFAULT_WAIT, async |b| {
    ///     b.attr("html", "lang").await.as_deref() == Some("en")
    /// }).await;
    /// ```
    pub async fn wait_until<F>(&self, what: &str, timeout: Duration, mut condition: F)
    where
        F: AsyncFnMut(&Self) -> bool,
    {
        let deadline = Instant::now() + timeout;
        while !condition(self).await {
            if Instant::now() >= deadline {
                self.fail(&format!("waited {timeout:?} for {what}")).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the JavaScript expression `expression` is truthy.
    pub async fn wait_for_js(&self, expression: &str, timeout: Duration) {
        let script = format!("return !!({expression});");
        self.wait_until(&format!("`{expression}`"), timeout, async |b| {
            b.try_execute(&script, vec![]).await.ok() == Some(Value::Bool(true))
        })
        .await;
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
        save_screenshot(name, &decode_base64(data))
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

    /// Ends the session, quits Chromium and removes its profile.
    pub async fn close(self) {
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
    std::fs::create_dir_all(&dir).expect("creating target/screenshots");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("saving a screenshot");
    path
}

fn decode_base64(text: &str) -> Vec<u8> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// A POST to a chromedriver extension endpoint under the session (`se/log`, `goog/cdp/execute`).
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

/// The chromedriver shared by every browser of this test process.
struct Driver {
    url: String,
    chromium: PathBuf,
    dir: PathBuf,
    log: PathBuf,
    profiles: AtomicUsize,
}

impl Driver {
    fn new_profile_dir(&self) -> PathBuf {
        let n = self.profiles.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("profile-{n}"));
        std::fs::create_dir_all(&dir).expect("creating a Chromium profile directory");
        dir
    }
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

fn driver() -> &'static Driver {
    DRIVER.get_or_init(start_driver)
}

fn start_driver() -> Driver {
    let chromium = find_program(&["chromium", "chromium-browser", "google-chrome"])
        .unwrap_or_else(|| panic!("Chromium was not found on PATH (chromium). Install it: {INSTALL_HINT}"));
    let chromedriver = find_program(&["chromedriver"])
        .unwrap_or_else(|| panic!("chromedriver was not found on PATH. Install it: {INSTALL_HINT}"));
    let dir = tempfile::Builder::new().prefix("watasu-chrome-").tempdir().expect("temp dir").keep();
    let log = dir.join("chromedriver.log");
    let port = free_port();
    // Its own process group, so the watchdog can stop it and every Chromium it started.
    use std::os::unix::process::CommandExt;
    // The watchdog below waits for it; this process never does.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {} failed: {e}. Install it: {INSTALL_HINT}", chromedriver.display()));
    spawn_watchdog(child.id(), &dir);
    let url = format!("http://127.0.0.1:{port}/");
    wait_until_ready(port, &log);
    Driver { url, chromium, dir, log, profiles: AtomicUsize::new(0) }
}

/// Without a Japanese font the pages still work, but screenshots show boxes instead of text.
fn warn_without_japanese_font() {
    let found = Command::new("fc-list").arg(":lang=ja").output().map(|o| !o.stdout.is_empty());
    if matches!(found, Ok(false)) {
        eprintln!(
            "warning: no Japanese font is installed, so screenshots will show boxes for Japanese \
             text. Install one: apt-get install fonts-noto-cjk"
        );
    }
}

/// Stops chromedriver (and its browsers) and removes the profiles once this process has exited.
fn spawn_watchdog(driver_pid: u32, dir: &Path) {
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 1; done; \
         kill -TERM -{driver_pid} 2>/dev/null; sleep 1; kill -KILL -{driver_pid} 2>/dev/null; \
         rm -rf {dir}",
        pid = std::process::id(),
        dir = dir.display(),
    );
    // The watchdog outlives this process on purpose; nobody waits for it.
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the chromedriver watchdog");
}

/// Waits until chromedriver's `/status` says it is ready.
fn wait_until_ready(port: u16, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if driver_ready(port).unwrap_or(false) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "chromedriver did not answer on 127.0.0.1:{port}/status within 20 s; its log: {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether chromedriver's `/status` says it is ready. It keeps HTTP/1.1 connections open (and
/// refuses HTTP/1.0), so read only until the answer is in.
fn driver_ready(port: u16) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    write!(stream, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")?;
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(false);
        }
        response.extend_from_slice(&buf[..n]);
        let text: String = String::from_utf8_lossy(&response).split_whitespace().collect();
        if text.contains("\"ready\":true") {
            return Ok(true);
        }
    }
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    names.iter().find_map(|name| dirs.iter().map(|dir| dir.join(name)).find(|candidate| candidate.is_file()))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
