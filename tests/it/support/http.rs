//! A simulated browser over plain HTTP: its own cookies, no redirects followed, each answer read
//! whole into a [`Page`] with selector helpers.

use std::{sync::Arc, time::Duration};

use reqwest::{
    StatusCode,
    cookie::{CookieStore, Jar},
    header::HeaderMap,
};
use scraper::{Html, Selector};

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

/// The Fetch Metadata a browser sends when a person opens a page (from another site's link, a mail).
pub const NAVIGATION: &[(&str, &str)] =
    &[("Sec-Fetch-Dest", "document"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Site", "none")];

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

    /// Opens a page as a person does, typing its address or following a link: with the Fetch
    /// Metadata of a top-level navigation.
    pub async fn navigate(&self, path: &str) -> Page {
        self.get_with(path, NAVIGATION).await
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

    /// Follows the 303 a successful upload answers with to its created page, as a browser
    /// would (with `client`'s cookies, which carry the link to that page).
    pub async fn follow_created(self, client: &reqwest::Client, base: &str) -> Page {
        assert_eq!(self.status, 303, "the upload did not lead to its created page: {}", self.body);
        let location = self.header("location").expect("a location").to_owned();
        assert!(location.starts_with("/shares/") && location.ends_with("/created"), "{location}");
        Page::read(client.get(format!("{base}{location}")).send().await.unwrap()).await
    }

    /// Follows a 303 as a browser would, with `browser`'s cookies and `headers`.
    pub async fn follow(self, browser: &Browser, headers: &[(&str, &str)]) -> Page {
        assert_eq!(self.status, 303, "no redirect: {}", self.body);
        let location = self.header("location").expect("a location").to_owned();
        browser.get_with(&location, headers).await
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

    /// The attribute `attr` of every element matching `selector` that has it.
    pub fn attrs(&self, selector: &str, attr: &str) -> Vec<String> {
        let selector = Selector::parse(selector).unwrap();
        self.html().select(&selector).filter_map(|e| e.value().attr(attr).map(str::to_owned)).collect()
    }

    /// The CSRF token of the page's first form.
    pub fn csrf_token(&self) -> String {
        self.attr("input[name=csrf_token]", "value").expect("the page has a CSRF token")
    }
}

/// The page with every CSRF token value blanked: what must be identical between two answers.
pub fn without_csrf(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some(at) = rest.find("name=\"csrf_token\" value=\"") {
        let start = at + "name=\"csrf_token\" value=\"".len();
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        rest = &rest[rest.find('"').unwrap()..];
    }
    out.push_str(rest);
    out
}
