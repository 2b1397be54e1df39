//! Every page a browser test meets is checked with axe-core (WCAG 2.1 A and AA, and best
//! practice) and photographed: a test fails on the first violation, so "0 violations" holds for
//! every page, language, width and JavaScript setting the tests reach.
//!
//! A page is checked once per state: its path, language and element structure (text changes such
//! as a progress figure do not count, an htmx swap that adds or hides elements does). The first
//! sight of each page per language, width and JavaScript setting is saved as a full-page screenshot
//! under `target/screenshots/pages/`, which CI keeps.
//!
//! Browsers without JavaScript have it switched off through DevTools and on again for the check
//! alone, at either width (the phone is emulated through DevTools too, see `BrowserSession::start`).

use std::{
    collections::HashSet,
    path::PathBuf,
    sync::{Mutex, OnceLock},
};

use serde_json::{Value, json};

use super::BrowserSession;

/// The rule sets the pages must pass.
const AXE_TAGS: [&str; 5] = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];

/// A bound for a run that hangs, not a speed target: axe-core needs well under a second on most
/// pages, but a page of hundreds of rows on a machine whose cores are busy took over 30 s in CI.
const AXE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The page's state as `[path, lang, step, structure hash]`, or `null` while it is not a loaded
/// page of ours (our pages carry base.html's htmx settings; a mail or a test's own server does not).
const PAGE_STATE: &str = "
    if (document.readyState !== 'complete' || !document.querySelector('meta[name=htmx-config]')) return null;
    let hash = 0;
    for (const e of document.body.querySelectorAll('*')) {
        const part = e.tagName + (e.id ? '#' + e.id : '') + (e.hidden ? '!' : '') + (e.disabled ? '~' : '');
        for (let i = 0; i < part.length; i++) hash = (hash * 31 + part.charCodeAt(i)) | 0;
    }
    const step = document.querySelector('[data-step]');
    return [location.pathname, document.documentElement.lang, step ? step.dataset.step : '', String(hash)];";

/// An expression whose promise gives the violations. It runs through the DevTools protocol, which
/// awaits promises even where the page's own JavaScript is switched off.
const RUN_AXE: &str = "
    axe.run(document, { runOnly: { type: 'tag', values: TAGS }, resultTypes: ['violations'] })
        .then(r => r.violations.map(v => ({
            rule: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary) })))";

impl BrowserSession {
    /// Checks the page now shown with axe-core unless this state of it was checked already, and
    /// saves its first screenshot. Called by the helpers whenever a test reaches a page.
    pub async fn check_page(&self) {
        let Ok(state) = self.client.execute(PAGE_STATE, vec![]).await else { return };
        let Some([path, lang, step, hash]) = state_parts(&state) else { return };
        let key = format!("{path}|{lang}|{step}|{hash}");
        if !self.checked_pages.lock().unwrap().insert(key) {
            return;
        }
        let violations = self.axe_violations().await;
        let name = self.page_name(&path, &lang, &step);
        if first_sight(&name) {
            self.screenshot_full_page(&format!("pages/{name}")).await;
        }
        if violations != json!([]) {
            let list = serde_json::to_string_pretty(&violations).unwrap_or_default();
            self.fail(&format!("axe-core found violations on {path} ({lang}, {name}):\n{list}")).await;
        }
    }

    /// Switches the page's scripts off or on. Scripts a page skipped while they were off do not
    /// run later, so switching them on for a moment lets axe-core run without changing the page.
    pub(super) async fn set_scripts_disabled(&self, disabled: bool) {
        self.cdp("Emulation.setScriptExecutionDisabled", json!({ "value": disabled })).await;
    }

    /// The violations axe-core finds on the page now, as a JSON array.
    pub async fn axe_violations(&self) -> Value {
        if self.options.javascript {
            return self.run_axe().await;
        }
        if self.execute("return typeof window.htmx;").await != json!("undefined") {
            self.fail("the page ran its scripts in a browser without JavaScript").await;
        }
        self.set_scripts_disabled(false).await;
        let violations = self.run_axe().await;
        self.set_scripts_disabled(true).await;
        violations
    }

    async fn run_axe(&self) -> Value {
        if self.execute("return typeof window.axe === 'object';").await != Value::Bool(true) {
            self.execute(axe_source()).await;
        }
        let expression = RUN_AXE.replace("TAGS", &json!(AXE_TAGS).to_string());
        let evaluate = json!({ "expression": expression, "awaitPromise": true, "returnByValue": true });
        let Ok(answer) = tokio::time::timeout(AXE_TIMEOUT, self.cdp("Runtime.evaluate", evaluate)).await else {
            self.fail(&format!("axe-core did not finish within {AXE_TIMEOUT:?}")).await
        };
        let violations = answer["result"]["value"].clone();
        if !violations.is_array() {
            self.fail(&format!("running axe-core: {answer}")).await;
        }
        violations
    }

    /// `s-_-code.ja.phone.nojs`: the path with its tokens and ids as `_`, the recipient's step,
    /// the language, the width and the JavaScript setting.
    fn page_name(&self, path: &str, lang: &str, step: &str) -> String {
        let segments: Vec<&str> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| if s.len() >= 16 || s.bytes().all(|b| b.is_ascii_digit()) { "_" } else { s })
            .collect();
        let mut name = if segments.is_empty() { "home".to_owned() } else { segments.join("-") };
        if !step.is_empty() {
            name.push_str(&format!("-{step}"));
        }
        let width = if self.options.viewport.is_phone() { "phone" } else { "desktop" };
        let js = if self.options.javascript { "" } else { ".nojs" };
        format!("{name}.{lang}.{width}{js}")
    }
}

fn state_parts(state: &Value) -> Option<[String; 4]> {
    let parts = state.as_array()?;
    let part = |i: usize| parts.get(i).and_then(Value::as_str).map(str::to_owned);
    Some([part(0)?, part(1)?, part(2)?, part(3)?])
}

/// Whether no test in this process has photographed the page `name` yet.
fn first_sight(name: &str) -> bool {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SEEN.get_or_init(Default::default).lock().unwrap().insert(name.to_owned())
}

/// `axe.min.js`: from `WATASU_AXE_CORE`, else the newest one `scripts/test` installed in the
/// user's cache. Missing fails the test with the way to install it: the check is never skipped.
fn axe_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let path = axe_path().unwrap_or_else(|| {
            panic!(
                "axe-core is not installed: run scripts/test (it installs it), or \
                 `npm install --prefix ~/.cache/watasu/axe-core axe-core` and set WATASU_AXE_CORE \
                 to the axe.min.js inside"
            )
        });
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    })
}

fn axe_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WATASU_AXE_CORE") {
        return Some(path.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let mut installed: Vec<PathBuf> = std::fs::read_dir(cache.join("watasu"))
        .ok()?
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("axe-core-"))
        .map(|entry| entry.path().join("node_modules/axe-core/axe.min.js"))
        .filter(|path| path.is_file())
        .collect();
    installed.sort();
    installed.pop()
}
