//! How a test browser starts: its viewport, language, JavaScript and download folder.

use std::path::PathBuf;

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
