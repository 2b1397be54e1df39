//! The recipient's steps over HTTP with plain forms (JavaScript off): open the link, ask for a
//! code, submit it, ask for a new one, download. Each step is one method here, so a test reads
//! as the walk it makes.

use super::{
    Browser, Page, TestApp, TestShare,
    browser::{BrowserSession, DEFAULT_WAIT},
};

/// The address every test share is made out to.
pub const RECIPIENT: &str = "recipient@example.test";

impl Browser {
    /// Opens a share link, as a person does.
    pub async fn open_link(&self, token: &str) -> Page {
        self.navigate(&format!("/s/{token}")).await
    }

    /// Opens the share link and asks for a code with `address`; returns the page the answer led
    /// to (the post answers 303 to the link), or the refusal.
    pub async fn ask_for_code(&self, token: &str, address: &str) -> Page {
        let landing = self.open_link(token).await;
        assert_eq!(landing.status, 200, "{}", landing.body);
        let answer = self
            .post_form(&format!("/s/{token}/email"), &[("csrf_token", &landing.csrf_token()), ("email", address)])
            .await;
        self.follow(token, answer).await
    }

    /// Follows a recipient form post's 303, which must lead back to the link, as a browser does;
    /// any other answer is returned as it is.
    pub async fn follow(&self, token: &str, answer: Page) -> Page {
        if answer.status != 303 {
            return answer;
        }
        assert_eq!(answer.header("location"), Some(format!("/s/{token}").as_str()), "the post led elsewhere");
        self.open_link(token).await
    }

    /// Submits a code on the code step whose form carried `csrf`.
    pub async fn submit_code(&self, token: &str, csrf: &str, code: &str) -> Page {
        self.post_form(&format!("/s/{token}/code"), &[("csrf_token", csrf), ("code", code)]).await
    }

    /// Asks for a new code on the code step whose form carried `csrf`; returns the page it led to.
    pub async fn resend_code(&self, token: &str, csrf: &str) -> Page {
        let answer = self.post_form(&format!("/s/{token}/code/new"), &[("csrf_token", csrf)]).await;
        self.follow(token, answer).await
    }

    /// "Use a different address" on the code step whose form carried `csrf`; returns the page it
    /// led to.
    pub async fn use_other_address(&self, token: &str, csrf: &str) -> Page {
        let answer = self.post_form(&format!("/s/{token}/address"), &[("csrf_token", csrf)]).await;
        self.follow(token, answer).await
    }

    /// Posts the download form as the page would and, like a browser, follows its 303 to the file
    /// with the same cookies; the answer is the file or a refusal page.
    pub async fn download(&self, token: &str, csrf: &str) -> reqwest::Response {
        let claim = self.claim(token, csrf).await;
        if claim.status() != 303 {
            return claim;
        }
        let location = claim.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(location, format!("/s/{token}/file"), "the claim sent the browser elsewhere");
        self.client.get(self.url(&location)).send().await.unwrap()
    }

    /// Posts the download form and returns its own answer (303 to the file, or a refusal).
    pub async fn claim(&self, token: &str, csrf: &str) -> reqwest::Response {
        self.client
            .post(self.url(&format!("/s/{token}/download")))
            .header("Sec-Fetch-Site", "same-origin")
            .form(&[("csrf_token", csrf)])
            .send()
            .await
            .unwrap()
    }

    /// GETs the claimed file with extra request headers (a Range, an If-Range).
    pub async fn fetch_file(&self, token: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        self.fetch(&format!("/s/{token}/file"), headers).await
    }

    /// Posts the button of one file of several (at `position`) and returns its own answer (303 to
    /// that file, or a refusal).
    pub async fn claim_one(&self, token: &str, csrf: &str, position: i32) -> reqwest::Response {
        self.client
            .post(self.url(&format!("/s/{token}/files/{position}")))
            .header("Sec-Fetch-Site", "same-origin")
            .form(&[("csrf_token", csrf)])
            .send()
            .await
            .unwrap()
    }

    /// GETs one claimed file of several with extra request headers.
    pub async fn fetch_one(&self, token: &str, position: i32, headers: &[(&str, &str)]) -> reqwest::Response {
        self.fetch(&format!("/s/{token}/files/{position}"), headers).await
    }

    async fn fetch(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.get(self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }
}

impl TestApp {
    /// Walks `browser` through the whole flow as [`RECIPIENT`] to a verified session; returns the
    /// download page.
    pub async fn verify(&self, browser: &Browser, share: &TestShare) -> Page {
        self.verify_as(browser, share, RECIPIENT).await
    }

    /// The same for a share made out to `address`.
    pub async fn verify_as(&self, browser: &Browser, share: &TestShare, address: &str) -> Page {
        let before = self.smtp.messages().len();
        let code_step = browser.ask_for_code(&share.token, address).await;
        assert_eq!(code_step.status, 200, "{}", code_step.body);
        let code = self.smtp.code_for_after(address, before).await;
        let answer = browser.submit_code(&share.token, &code_step.csrf_token(), &code).await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        let page = browser.open_link(&share.token).await;
        assert_eq!(page.attr("#step", "data-step").as_deref(), Some("download"), "{}", page.body);
        page
    }

    /// Walks a real browser from `link` to the download step as `address`, with the code from the
    /// mail.
    pub async fn walk_to_download_step(&self, browser: &BrowserSession, link: &str, address: &str) {
        let before = self.smtp.messages().len();
        browser.goto(link).await;
        browser.fill("input[name=email]", address).await;
        browser.click("#step form[action$='/email'] button[type=submit]").await;
        browser.wait_for("#step[data-step=code]", DEFAULT_WAIT).await;
        let code = self.smtp.code_for_after(address, before).await;
        browser.fill("#code", &code).await;
        browser.click("#step form[action$='/code'] button[type=submit]").await;
        browser.wait_for("#step[data-step=download]", DEFAULT_WAIT).await;
    }

    /// A new browser on a share's landing page, with the page's CSRF token.
    pub async fn landed_browser(&self, token: &str) -> (Browser, String) {
        let browser = self.browser();
        let landing = browser.open_link(token).await;
        assert_eq!(landing.status, 200, "{}", landing.body);
        let csrf = landing.csrf_token();
        (browser, csrf)
    }

    /// A new browser whose session holds a grant for `share` (as after a right code, without the
    /// walk), with its CSRF token.
    pub async fn granted_browser(&self, share: &TestShare) -> (Browser, String) {
        let created = self.state.sessions.create().await.unwrap();
        self.state.shares.grants.grant(created.session.id, share.id).await.unwrap();
        let browser = self.browser();
        browser.set_cookie("watasu_session", created.cookie_value.expose());
        (browser, created.session.csrf_secret)
    }

    /// A new browser verified for `share`, with the CSRF token of its download page.
    pub async fn verified_browser(&self, share: &TestShare) -> (Browser, String) {
        let browser = self.browser();
        let page = self.verify(&browser, share).await;
        (browser, page.csrf_token())
    }
}

/// Every event kind recorded for a share, oldest first.
pub async fn event_kinds(app: &TestApp, share_id: i64) -> Vec<String> {
    app.state.events.list(share_id).await.unwrap().into_iter().map(|e| e.kind.code().to_owned()).collect()
}

/// The page with its CSRF tokens and the typed address it shows back blanked: what must be
/// identical between the answers to a matched and an unmatched address.
pub fn without_csrf_and_typed(body: &str) -> String {
    const OPEN: &str = "<strong class=\"typed-address\">";
    let body = super::without_csrf(body);
    let mut out = String::new();
    let mut rest = body.as_str();
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at + OPEN.len()]);
        rest = &rest[at + OPEN.len()..];
        rest = &rest[rest.find("</strong>").expect("the address element closes")..];
    }
    out.push_str(rest);
    out
}
