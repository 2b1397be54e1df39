//! The app below a subpath: `WATASU_BASE_URL=http://PROXY/files` behind a real nginx that passes
//! `/files/` on unchanged, walked as a browser would. Every link, form, asset, redirect and
//! cookie it answers with stays below `/files`; outside it there is only the 404 page.

use scraper::{Html, Selector};

use crate::{
    both_backends,
    support::{
        Backend, Browser, Page, RECIPIENT,
        browser::{BrowserOptions, BrowserSession},
        installation::Installation,
        nginx::Nginx,
        process::{free_local_addr, run_watasu},
    },
};

const SENDER: &str = "subpath-sender@example.test";

/// The app behind nginx at `/files/`, and a browser at nginx's origin (paths name `/files`).
struct Subpath {
    install: Installation,
    nginx: Nginx,
    app_addr: String,
    _server: crate::support::process::Server,
}

impl Subpath {
    async fn start(backend: crate::support::Backend) -> Self {
        let install = Installation::new(backend).await;
        let app_addr = free_local_addr();
        let nginx = Nginx::start_below("/files/", &app_addr);
        // The trailing slash is optional: it is normalised away.
        let base_url = format!("{}/files/", nginx.base());
        let server = install.start_on(&app_addr, &["--base-url", &base_url]);
        Self { install, nginx, app_addr, _server: server }
    }

    /// The base URL as the app writes it into absolute links.
    fn base_url(&self) -> String {
        format!("{}/files", self.nginx.base())
    }

    fn browser(&self) -> Browser {
        Browser::new(&self.nginx.base())
    }
}

/// What every answer below the subpath must hold: redirects and cookies below `/files`, and in
/// an HTML page every `href`, `action`, `src` and `hx-*` URL below `/files/` (or a fragment).
fn assert_below_subpath(what: &str, page: &Page, base_url: &str) {
    for location in ["location", "hx-redirect"].iter().filter_map(|name| page.header(name)) {
        assert!(location.starts_with("/files/") || location.starts_with(base_url), "{what}: Location {location}");
    }
    for cookie in page.headers.get_all("set-cookie") {
        let cookie = cookie.to_str().unwrap();
        let path = cookie.split("; ").find_map(|part| part.strip_prefix("Path="));
        assert!(path.is_some_and(|p| p == "/files" || p.starts_with("/files/")), "{what}: Set-Cookie {cookie}");
    }
    let urls = urls_in(&page.body);
    for (attribute, url) in &urls {
        assert!(url.starts_with("/files/") || url.starts_with('#'), "{what}: {attribute}=\"{url}\"");
    }
}

/// Every URL attribute of the page's elements, with its name.
fn urls_in(body: &str) -> Vec<(String, String)> {
    let attributes = ["href", "action", "src", "hx-get", "hx-post", "hx-put", "hx-patch", "hx-delete"];
    let selector = Selector::parse(&attributes.map(|a| format!("[{a}]")).join(", ")).unwrap();
    let html = Html::parse_document(body);
    html.select(&selector)
        .flat_map(|element| {
            attributes.iter().filter_map(move |a| element.value().attr(a).map(|url| ((*a).to_owned(), url.to_owned())))
        })
        .collect()
}

/// The Set-Cookie header that sets `name`.
fn set_cookie(page: &Page, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    page.headers.get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).find(|c| c.starts_with(&prefix))
}

async fn get(browser: &Browser, path: &str, base_url: &str) -> Page {
    let page = browser.get(path).await;
    assert_below_subpath(&format!("GET {path}"), &page, base_url);
    page
}

async fn post(browser: &Browser, path: &str, fields: &[(&str, &str)], base_url: &str) -> Page {
    let page = browser.post_form(path, fields).await;
    assert_below_subpath(&format!("POST {path}"), &page, base_url);
    page
}

/// The page's first form's `action`.
fn action(page: &Page, form: &str) -> String {
    page.attr(form, "action").unwrap_or_else(|| panic!("no {form} in {}", page.body))
}

/// Landing page, assets and the language switch: returns the browser, now in the other language.
async fn landing_assets_and_language(app: &Subpath) -> Browser {
    let base_url = app.base_url();
    let browser = app.browser();
    let landing = get(&browser, "/files/", &base_url).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let assets: Vec<String> = urls_in(&landing.body)
        .into_iter()
        .filter(|(attribute, url)| attribute == "src" || url.contains("/static/"))
        .map(|(_, url)| url)
        .collect();
    assert!(assets.len() >= 4, "{assets:?}");
    for asset in assets {
        let answer = get(&browser, &asset, &base_url).await;
        assert_eq!(answer.status, 200, "{asset}");
    }
    // The switch links to the other language (the default is Japanese without Accept-Language).
    let other = landing.attr(".lang-switch a[hreflang]", "hreflang").expect("a switch to another language");
    let switch = landing.attr(".lang-switch a[hreflang]", "href").unwrap();
    let switched = get(&browser, &switch, &base_url).await;
    assert_eq!(switched.status, 200);
    let cookie = set_cookie(&switched, "lang");
    assert!(cookie.as_ref().is_some_and(|c| c.starts_with(&format!("lang={other};"))), "{:?}", switched.headers);
    // The cookie comes back below the subpath: a page without ?lang= is in that language too.
    assert_eq!(get(&browser, "/files/login", &base_url).await.attr("html", "lang"), Some(other));
    browser
}

/// Signs the sender in through the form; returns the dashboard.
async fn sign_in(app: &Subpath, browser: &Browser, password: &str) -> Page {
    let base_url = app.base_url();
    let login = get(browser, "/files/login", &base_url).await;
    let form = action(&login, "form[method=post]:not(.sign-out)");
    assert_eq!(form, "/files/login");
    let fields = [("csrf_token", login.csrf_token()), ("email", SENDER.to_owned()), ("password", password.to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let answer = post(browser, &form, &fields, &base_url).await;
    assert_eq!((answer.status.as_u16(), answer.header("location")), (303, Some("/files/shares")), "{}", answer.body);
    let dashboard = get(browser, "/files/shares", &base_url).await;
    assert_eq!(dashboard.status, 200);
    assert!(dashboard.attr("form.sign-out", "action").is_some(), "not signed in: {}", dashboard.body);
    dashboard
}

/// A tus upload from the new-share page's endpoint: POST → Location → PATCH → HEAD.
async fn tus_upload(app: &Subpath, browser: &Browser, form_page: &Page) {
    let base_url = app.base_url();
    let endpoint = form_page.attr("form[data-upload]", "data-tus-endpoint").expect("the tus endpoint");
    assert_eq!(endpoint, "/files/uploads");
    let tus = |method: reqwest::Method, path: &str| {
        browser
            .client
            .request(method, browser.url(path))
            .header("Tus-Resumable", "1.0.0")
            .header("X-CSRF-Token", form_page.csrf_token())
            .header("Sec-Fetch-Site", "same-origin")
    };
    let created = tus(reqwest::Method::POST, &endpoint).header("Upload-Length", "5").send().await.unwrap();
    let created = Page::read(created).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_below_subpath("POST /files/uploads", &created, &base_url);
    let upload = created.header("location").unwrap().to_owned();
    assert!(upload.starts_with("/files/uploads/"), "{upload}");
    let patched = tus(reqwest::Method::PATCH, &upload)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    let head = tus(reqwest::Method::HEAD, &upload).send().await.unwrap();
    assert_eq!(head.headers()["upload-offset"], "5");
}

/// The new-share form posted with a file, its redirect and the created page; returns the link.
async fn new_share(app: &Subpath, browser: &Browser, form_page: &Page) -> String {
    let base_url = app.base_url();
    let form = action(form_page, "form[data-upload]");
    assert_eq!(form, "/files/shares/new");
    let fields = reqwest::multipart::Form::new()
        .text("csrf_token", form_page.csrf_token())
        .text("recipient", RECIPIENT)
        .text("expires_in", "1d")
        .text("mail_lang", "en")
        .text("notify", "1")
        .part("file", reqwest::multipart::Part::bytes(b"below a subpath".to_vec()).file_name("notes.txt"));
    let request = browser.client.post(browser.url(&form)).header("Sec-Fetch-Site", "same-origin");
    let answer = Page::read(request.multipart(fields).send().await.unwrap()).await;
    assert_below_subpath("POST /files/shares/new", &answer, &base_url);
    assert_eq!(answer.status, 303, "{}", answer.body);
    let created = answer.header("location").unwrap().to_owned();
    assert!(created.starts_with("/files/shares/") && created.ends_with("/created"), "{created}");
    let cookie = set_cookie(&answer, "watasu_created").expect("the link's cookie");
    assert!(cookie.contains(&format!("; Path={created}")), "{cookie}");
    let page = get(browser, &created, &base_url).await;
    assert_eq!(page.status, 200);
    let link = page.attr("#share-link", "value").expect("the created page shows the link");
    assert!(link.starts_with(&format!("{base_url}/s/")), "{link}");
    link
}

/// The recipient opens the link, asks for a code, types it and downloads the file.
async fn recipient_downloads(app: &Subpath, link: &str) {
    let base_url = app.base_url();
    let browser = app.browser();
    let share = link.strip_prefix(&app.nginx.base()).unwrap().to_owned();
    let landing = get(&browser, &share, &base_url).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let before = app.install.smtp.messages().len();
    let email_form = action(&landing, "form[hx-post]");
    assert_eq!(email_form, format!("{share}/email"));
    let asked =
        post(&browser, &email_form, &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)], &base_url).await;
    assert_eq!(asked.header("location"), Some(share.as_str()), "{}", asked.body);
    let code = app.install.smtp.code_for_after(RECIPIENT, before).await;
    let step = get(&browser, &share, &base_url).await;
    let code_form = action(&step, "form[hx-post]");
    let typed = post(&browser, &code_form, &[("csrf_token", &step.csrf_token()), ("code", &code)], &base_url).await;
    assert_eq!(typed.status, 303, "{}", typed.body);
    let ready = get(&browser, &share, &base_url).await;
    let download_form = action(&ready, "form[data-download]");
    let claim = post(&browser, &download_form, &[("csrf_token", &ready.csrf_token())], &base_url).await;
    let file = format!("{share}/file");
    assert_eq!(claim.header("location"), Some(file.as_str()));
    let downloaded = browser.get(&file).await;
    assert_eq!((downloaded.status.as_u16(), downloaded.body.as_str()), (200, "below a subpath"));
}

/// Every mail links into the subpath once, never with the path doubled.
fn assert_mails_link_below_the_subpath(app: &Subpath) {
    let mails = app.install.smtp.messages();
    assert!(!mails.is_empty());
    for mail in mails {
        let text = mail.text();
        assert!(!text.contains("/files/files"), "{text}");
        for (at, _) in text.match_indices(&app.nginx.base()) {
            assert!(text[at + app.nginx.base().len()..].starts_with("/files/"), "{text}");
        }
    }
}

async fn the_whole_app_works_below_a_subpath_behind_nginx(backend: Backend) {
    let app = Subpath::start(backend).await;
    let password = app.install.add_sender(SENDER);
    let browser = landing_assets_and_language(&app).await;
    sign_in(&app, &browser, &password).await;
    let form_page = get(&browser, "/files/shares/new", &app.base_url()).await;
    assert_eq!(form_page.status, 200);
    tus_upload(&app, &browser, &form_page).await;
    let link = new_share(&app, &browser, &form_page).await;
    recipient_downloads(&app, &link).await;
    assert_mails_link_below_the_subpath(&app);
}

async fn outside_the_subpath_there_is_only_the_404_page_and_probes_live_below_it(backend: Backend) {
    let app = Subpath::start(backend).await;
    let base_url = app.base_url();
    let direct = Browser::new(&format!("http://{}", app.app_addr));
    for path in ["/", "/login", "/healthz", "/static/x/app.css", "/filesx"] {
        let page = direct.get(path).await;
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.attr("[data-status]", "data-status").as_deref(), Some("404"), "{path}: {}", page.body);
        assert_below_subpath(path, &page, &base_url);
    }
    let browser = app.browser();
    let missing = get(&browser, "/files/nowhere", &base_url).await;
    assert_eq!(missing.attr("[data-status]", "data-status").as_deref(), Some("404"));
    for probe in ["/files/healthz", "/files/readyz"] {
        assert_eq!(browser.get(probe).await.status, 200, "{probe}");
    }
    // An HTMX request that needs a sign-in is sent to the sign-in page below the subpath.
    let htmx = browser.get_with("/files/shares", &[("HX-Request", "true")]).await;
    assert_eq!(htmx.header("hx-redirect"), Some("/files/login"));
    let plain = get(&browser, "/files/shares", &base_url).await;
    assert_eq!(plain.header("location"), Some("/files/login"));
}

async fn a_real_browser_loads_the_start_page_and_its_assets_below_the_subpath(backend: Backend) {
    let app = Subpath::start(backend).await;
    let browser = BrowserSession::start(BrowserOptions::desktop()).await;
    browser.goto(&format!("{}/", app.base_url())).await;
    // htmx and app.js ran, the stylesheet applied, and every resource came from below /files/.
    assert_eq!(browser.execute("return typeof htmx;").await, "object");
    let styled = "return Array.from(document.styleSheets).filter(s => s.cssRules.length > 0).length;";
    assert_eq!(browser.execute(styled).await, 1);
    let loaded = browser.execute("return performance.getEntriesByType('resource').map(e => e.name);").await;
    let loaded: Vec<String> = serde_json::from_value(loaded).unwrap();
    assert!(loaded.len() >= 3, "{loaded:?}");
    let assets = format!("{}/static/", app.base_url());
    assert!(loaded.iter().all(|url| url.starts_with(&assets)), "{loaded:?}");
    assert_eq!(browser.csp_violations().await, Vec::<String>::new());
    browser.close().await;
}

both_backends!(
    the_whole_app_works_below_a_subpath_behind_nginx,
    outside_the_subpath_there_is_only_the_404_page_and_probes_live_below_it,
    a_real_browser_loads_the_start_page_and_its_assets_below_the_subpath
);

#[test]
fn a_base_url_with_a_query_or_a_pattern_like_path_stops_start_up_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    for url in ["https://example.com/files?x=1", "https://example.com/files#top", "https://example.com/:files"] {
        let (code, stdout, stderr) = run_watasu(&["serve", "--data-dir", data, "--base-url", url], &[]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "more than one line: {stderr}");
        assert!(stderr.contains("WATASU_BASE_URL"), "{stderr}");
        assert!(stdout.is_empty());
    }
}
