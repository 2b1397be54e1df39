//! The second factor's test client: a browser behind the test proxy with an address of its own,
//! and the codes an authenticator app would show.

use totp_rs::{Builder, Secret};

use crate::support::{Backend, Browser, PASSWORD, Page, TestApp};

pub(super) const OWNER: &str = "owner@example.test";
pub(super) const ATTACKER: &str = "203.0.113.7";
pub(super) const OWNERS_LAPTOP: &str = "198.51.100.20";

pub(super) fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The code an app shows `offset` steps from now.
pub fn code(secret: &[u8], offset: i64) -> String {
    let bytes: [u8; 20] = secret.try_into().unwrap();
    let totp = Builder::new().with_secret(Secret::new_stack(bytes)).build().unwrap();
    let step = (now() / 30) as i64 + offset;
    totp.generate(step as u64 * 30).to_string()
}

/// Waits, if need be, for a step with at least ten seconds left, so that a code computed now is
/// still of the same step when the server checks it.
pub async fn room_in_this_step() {
    while now() % 30 > 20 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A client at one address (the app believes X-Forwarded-For from the test client).
pub(super) struct Client {
    pub(super) browser: Browser,
    address: &'static str,
}

impl Client {
    pub(super) fn new(app: &TestApp, address: &'static str) -> Self {
        Self { browser: app.browser(), address }
    }

    pub(super) async fn get(&self, path: &str) -> Page {
        self.browser.get_with(path, &[("X-Forwarded-For", self.address)]).await
    }

    pub(super) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let headers = [("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", self.address)];
        self.browser.post_form_with(path, fields, &headers).await
    }

    /// The password step; returns where it leads.
    pub(super) async fn password(&self, email: &str) -> String {
        let csrf = self.get("/login").await.csrf_token();
        let answer = self.post("/login", &[("csrf_token", &csrf), ("email", email), ("password", PASSWORD)]).await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        answer.header("location").unwrap().to_owned()
    }

    /// Posts a code on the second-factor page.
    pub(super) async fn code(&self, code: &str) -> Page {
        let page = self.get("/login/second-factor").await;
        assert_eq!(page.status, 200, "{:?} {}", page.header("location"), page.body);
        self.post("/login/second-factor", &[("csrf_token", &page.csrf_token()), ("code", code)]).await
    }

    pub(super) async fn signed_in(&self) -> bool {
        self.get("/shares").await.status == 200
    }
}

pub(super) async fn app_behind_proxy(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await
}

/// Sets up an app from the account page of a signed-in `client`: returns its secret (read from
/// the page as a person types it) and the recovery codes shown once.
pub(super) async fn enrol(client: &Client) -> (Vec<u8>, Vec<String>) {
    let account = client.get("/account").await;
    let started = client.post("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;
    assert_eq!(started.header("location"), Some("/account/totp"), "{}", started.body);
    let setup = client.get("/account/totp").await;
    assert_eq!(setup.status, 200);
    assert!(setup.attr(".qr svg", "viewBox").is_some(), "no QR code drawn: {}", setup.body);
    let secret = secret_shown(&setup);
    room_in_this_step().await;
    let fields = [("csrf_token", setup.csrf_token()), ("code", code(&secret, 0)), ("password", PASSWORD.to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let done = client.post("/account/totp/confirm", &fields).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let codes = done.texts("[data-recovery-codes] code");
    assert_eq!(codes.len(), 10);
    (secret, codes)
}

/// A sender `OWNER` with an app set up; returns the client still signed in, the app's secret
/// and the recovery codes.
pub(super) async fn owner_with_app(app: &TestApp) -> (Client, Vec<u8>, Vec<String>) {
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let client = Client::new(app, OWNERS_LAPTOP);
    assert_eq!(client.password(OWNER).await, "/shares");
    let (secret, codes) = enrol(&client).await;
    (client, secret, codes)
}

/// A sender `email` with an app set up, for tests outside this module: the recovery codes.
pub async fn sender_with_app(app: &TestApp, email: &str) -> Vec<String> {
    app.create_sender_with_password(email, "Sender", PASSWORD).await;
    let client = Client::new(app, OWNERS_LAPTOP);
    assert_eq!(client.password(email).await, "/shares");
    enrol(&client).await.1
}

/// `OWNER`, signed in without a factor, has started setting up an app and not confirmed it yet:
/// their client, the set-up page and the app's secret read from it.
pub(super) async fn owner_setting_up_an_app(app: &TestApp) -> (Client, Page, Vec<u8>) {
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::new(app, OWNERS_LAPTOP);
    assert_eq!(owner.password(OWNER).await, "/shares");
    let account = owner.get("/account").await;
    owner.post("/account/totp", &[("csrf_token", &account.csrf_token()), ("password", PASSWORD)]).await;
    let setup = owner.get("/account/totp").await;
    let secret = secret_shown(&setup);
    (owner, setup, secret)
}

/// The app's secret from the key a set-up page shows, as a person types it into an app.
pub(super) fn secret_shown(page: &Page) -> Vec<u8> {
    let key = page.texts("[data-totp-secret]").pop().unwrap().replace(' ', "");
    Secret::try_from_base32(&key).unwrap().as_bytes().to_vec()
}

pub(super) fn session_cookie(client: &Client) -> String {
    client.browser.cookie("watasu_session").expect("a session cookie")
}
