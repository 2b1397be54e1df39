//! What every page shares (the layout's context) and the start page.

use askama::Template;
use poem::{IntoResponse, Request, Response, handler, http::StatusCode, web::Html};

use super::{AppError, AppState, middleware::SessionHandle, nav::Nav, paths};
use crate::{
    accounts::TimeZone,
    i18n::{Lang, Text, format::Reader},
};

/// The layout's context: language, catalogue, asset URLs, the language switch and, for a
/// signed-in sender, the navigation and their time zone.
pub struct Chrome {
    /// The base path (`/files`, or empty at the root): every URL a page links to starts with it,
    /// written in templates as `{{ c.base }}/shares`.
    pub base: String,
    pub lang: Lang,
    pub t: &'static Text,
    assets_version: String,
    /// One link per language to this same page, for the visible switch.
    pub switch: Vec<LangLink>,
    /// A sender is signed in: the header shows the dashboard's links.
    pub signed_in: bool,
    /// The signed-in sender's navigation (with the sign-out form); `None` for anyone else.
    pub nav: Option<Nav>,
    /// The sign-out form's CSRF token (empty unless signed in: a page view stores nothing).
    pub csrf_token: String,
    /// The zone the signed-in sender chose; `None`: the language's default.
    pub zone: Option<TimeZone>,
    /// A recipient's page (/s/…): no sender sign-in link in its footer.
    pub recipient_page: bool,
    /// A sign-in page (/login…): its footer does not link to the page it is on.
    pub sign_in_page: bool,
}

pub struct LangLink {
    pub code: &'static str,
    pub name: &'static str,
    pub href: String,
    pub current: bool,
}

impl Chrome {
    pub fn new(req: &Request, lang: Lang) -> Self {
        let version = req.data::<AppState>().map(|s| s.assets_version.as_str()).unwrap_or("0");
        let path = same_origin_path(req.uri().path());
        let handle = req.extensions().get::<SessionHandle>();
        let session = handle.and_then(SessionHandle::current).filter(|s| s.user_id.is_some());
        let dev_outbox = req.data::<AppState>().is_some_and(|s| s.config.settings.smtp_url.is_none());
        let nav = session.as_ref().map(|s| Nav::new(lang.text(), &path, s.is_admin, dev_outbox));
        Self {
            base: req.data::<AppState>().map(|s| s.config.base_path.to_string()).unwrap_or_default(),
            signed_in: session.is_some(),
            nav,
            csrf_token: session.as_ref().map(|s| s.csrf_secret.clone()).unwrap_or_default(),
            zone: session.and_then(|s| s.time_zone),
            recipient_page: path.starts_with("/s/"),
            sign_in_page: path == paths::LOGIN || path.starts_with("/login/"),
            lang,
            t: lang.text(),
            assets_version: version.to_owned(),
            switch: Lang::ALL
                .iter()
                .map(|&other| LangLink {
                    code: other.code(),
                    name: other.text().chrome.lang_name,
                    href: format!("{path}?lang={}", other.code()),
                    current: other == lang,
                })
                .collect(),
        }
    }

    /// Where the brand leads: the dashboard for a signed-in sender, else the start page.
    pub fn home_href(&self) -> &'static str {
        if self.signed_in { paths::SHARES } else { paths::HOME }
    }

    /// Who reads this page's times: its language and the sender's chosen zone.
    pub fn reader(&self) -> Reader {
        Reader { lang: self.lang, zone: self.zone }
    }

    /// The versioned URL of a static asset.
    pub fn asset_url(&self, name: &str) -> String {
        format!("/static/{}/{name}", self.assets_version)
    }

    /// The layout context for the language already chosen for this request.
    pub fn for_request(req: &Request) -> Self {
        let lang = req.extensions().get::<Lang>().copied().unwrap_or_default();
        Self::new(req, lang)
    }
}

/// The request path as a link that can only lead to this origin. Browsers read `//host` and `/\\host`
/// as another site and drop tabs and newlines before they look, so the path is rebuilt from its
/// non-empty segments (either slash splits), without control characters, behind one `/`.
pub fn same_origin_path(path: &str) -> String {
    let segments: Vec<String> = path
        .split(['/', '\\'])
        .map(|segment| segment.chars().filter(|c| !c.is_control() && !c.is_whitespace()).collect::<String>())
        .filter(|segment| !segment.is_empty())
        .collect();
    format!("/{}", segments.join("/"))
}

/// A redirect after a form post (POST → 303 → GET), so a reload never posts again.
pub fn see_other(location: &str) -> poem::Response {
    poem::Response::builder().status(poem::http::StatusCode::SEE_OTHER).header("Location", location).finish()
}

/// Renders a template into an HTML response.
pub fn render(template: &impl Template) -> Result<Html<String>, AppError> {
    Ok(Html(template.render()?))
}

/// Renders a template into an HTML response with this status (a refused form, a page that answers
/// for a handler that may also redirect).
pub fn render_with(status: StatusCode, template: &impl Template) -> Result<Response, AppError> {
    Ok(render(template)?.with_status(status).into_response())
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    c: Chrome,
}

#[handler]
pub fn home(c: Chrome) -> Result<Html<String>, AppError> {
    render(&HomePage { c })
}

#[cfg(test)]
mod tests {
    use super::same_origin_path;

    #[test]
    fn the_language_switch_path_never_names_another_host() {
        for (path, expected) in [
            ("/", "/"),
            ("/login", "/login"),
            ("/s/abc/code", "/s/abc/code"),
            ("//evil.example/x", "/evil.example/x"),
            ("/\\evil.example/", "/evil.example"),
            ("/\\/evil.example", "/evil.example"),
            ("///evil.example", "/evil.example"),
            ("/%2F%2Fevil", "/%2F%2Fevil"),
            ("/\t/evil.example", "/evil.example"),
            ("/\n\r/evil.example", "/evil.example"),
            ("/ /evil.example", "/evil.example"),
            ("", "/"),
        ] {
            let href = same_origin_path(path);
            assert_eq!(href, expected, "{path:?}");
            assert!(href.starts_with('/') && !href.starts_with("//") && !href.starts_with("/\\"), "{path:?}");
        }
    }

    /// Every URL a page template emits starts with the base path (mails link absolutely instead),
    /// but for a mailto link.
    #[test]
    fn every_link_form_and_asset_in_page_templates_starts_with_the_base_path() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        let mut folders = vec![root.clone()];
        let mut checked = 0;
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
                let path = entry.path();
                if path.is_dir() {
                    if path != root.join("mail") {
                        folders.push(path);
                    }
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for attribute in ["href", "action", "src", "hx-get", "hx-post", "hx-put", "hx-patch", "hx-delete"] {
                    for (at, _) in text.match_indices(&format!(" {attribute}=\"")) {
                        let value = &text[at + attribute.len() + 3..];
                        checked += 1;
                        assert!(
                            value.starts_with("{{ c.base }}") || value.starts_with('#') || value.starts_with("mailto:"),
                            "{}: {attribute}=\"{}",
                            path.display(),
                            value.split('"').next().unwrap_or_default()
                        );
                    }
                }
            }
        }
        assert!(checked > 30, "only {checked} URLs found");
    }
}
