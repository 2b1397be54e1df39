//! What a test does in a page: navigate, find, fill, click, read, and wait for something to show.

use std::time::{Duration, Instant};

use fantoccini::{Locator, elements::Element};

use serde_json::Value;

use super::{BrowserSession, DEFAULT_WAIT};

impl BrowserSession {
    /// Signs `email` in with the test password on the page at `base`, and waits for the share
    /// list it lands on.
    pub async fn sign_in(&self, base: &str, email: &str) {
        self.goto(&format!("{base}/login")).await;
        self.fill("#email", email).await;
        self.fill("#password", crate::support::PASSWORD).await;
        self.click("main form button[type=submit]").await;
        self.wait_until("the signed-in list", DEFAULT_WAIT, async |b| b.current_path().await == "/shares").await;
    }

    /// Opens `url` and waits for its load event. This and every helper that waits for an element
    /// also checks the page with axe-core (see `pages`).
    pub async fn goto(&self, url: &str) {
        if let Err(e) = self.client.goto(url).await {
            self.fail(&format!("opening {url}: {e}")).await;
        }
        self.check_page().await;
    }

    /// Reloads the page and waits for its load event.
    pub async fn reload(&self) {
        if let Err(e) = self.client.refresh().await {
            self.fail(&format!("reloading: {e}")).await;
        }
        self.check_page().await;
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
                self.check_page().await;
                return element;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("no element matched `{css}` within {timeout:?}")).await;
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

    /// Panics unless the page fits its window's width: it does not scroll sideways and no
    /// element reaches past the right edge (one clipped by `overflow: hidden` would).
    pub async fn assert_no_horizontal_overflow(&self, what: &str) {
        let wide = self
            .execute(
                "const edge = document.documentElement.clientWidth; \
                 const scrolls = document.documentElement.scrollWidth > edge ? ['the page scrolls sideways'] : []; \
                 return scrolls.concat([...document.querySelectorAll('body *')] \
                   .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > edge + 0.5; }) \
                   .map(e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : '')));",
            )
            .await;
        if wide != Value::Array(vec![]) {
            self.fail(&format!("{what}: reaches past the right edge: {wide}")).await;
        }
    }
}
