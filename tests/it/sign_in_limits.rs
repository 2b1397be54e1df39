//! How fast a sender's password may be guessed: only failures count, per account and client,
//! with a wait that doubles past a few free failures; a stranger's guesses never keep the owner
//! out, refused attempts neither count nor extend the wait, and the account forms that ask for the
//! current password again wait the same way. Time moves through the database, never by sleeping,
//! and a wait the next request must meet is held open there, however slow the machine.

use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp},
};

use crate::support::PASSWORD;
const OWNER: &str = "owner@example.test";
const ATTACKER: &str = "203.0.113.7";
const OWNERS_LAPTOP: &str = "198.51.100.20";

/// An app that believes X-Forwarded-For from the test client, so each test names its clients.
async fn app_behind_proxy(backend: Backend) -> TestApp {
    let app = TestApp::spawn_with(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    app
}

/// One sign-in form, posted again and again from one client (one browser, one CSRF token).
struct Client {
    browser: Browser,
    csrf: String,
    address: &'static str,
}

impl Client {
    async fn new(app: &TestApp, address: &'static str) -> Self {
        let browser = app.browser();
        let csrf = browser.get_with("/login", &[("X-Forwarded-For", address)]).await.csrf_token();
        Self { browser, csrf, address }
    }

    async fn sign_in(&self, email: &str, password: &str) -> Page {
        self.browser
            .post_form_with(
                "/login",
                &[("csrf_token", &self.csrf), ("email", email), ("password", password)],
                &[("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", self.address)],
            )
            .await
    }
}

fn retry_after(page: &Page) -> u64 {
    assert_eq!(page.status, 429, "{}", page.body);
    page.header("retry-after").expect("a 429 says when to come back").parse().unwrap()
}

/// Fails `n` times from `client`, each after the wait of the failures before it has passed, then
/// holds the wait the last one began, so the next request meets it whole.
async fn fail_times(app: &TestApp, client: &Client, email: &str, n: usize) {
    for attempt in 1..=n {
        app.age_rate_limits(3600).await;
        let page = client.sign_in(email, "not the password at all").await;
        assert_eq!(page.status, 200, "failure {attempt} was refused: {}", page.body);
    }
    app.hold_rate_limits().await;
}

async fn an_attacker_hammering_an_account_does_not_keep_its_owner_out(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let attacker = Client::new(&app, ATTACKER).await;
    let mut refused = 0;
    for _ in 0..30 {
        let page = attacker.sign_in(OWNER, "a guess at the password").await;
        assert!(page.status == 200 || page.status == 429, "{}", page.status);
        refused += usize::from(page.status == 429);
    }
    assert!(refused > 0, "thirty guesses in a row were never slowed down");
    // Five more, each once its wait is over: ten failures or more wait at least 32 s.
    fail_times(&app, &attacker, OWNER, 5).await;
    assert_eq!(attacker.sign_in(OWNER, PASSWORD).await.status, 429, "the attacker's client is not throttled");

    let owner = Client::new(&app, OWNERS_LAPTOP).await;
    let signed_in = owner.sign_in(OWNER, PASSWORD).await;

    assert_eq!(signed_in.status, 303, "the owner was locked out: {}", signed_in.body);
    assert_eq!(signed_in.header("location"), Some("/shares"));
}

async fn refused_attempts_neither_extend_the_wait_nor_count_as_failures(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let attacker = Client::new(&app, ATTACKER).await;
    fail_times(&app, &attacker, OWNER, 6).await;
    for _ in 0..15 {
        let wait = retry_after(&attacker.sign_in(OWNER, "a guess at the password").await);
        assert!((1..=2).contains(&wait), "six failures wait 2 s, not {wait}");
    }

    app.age_rate_limits(2).await;
    let seventh = attacker.sign_in(OWNER, "a guess at the password").await;

    assert_eq!(seventh.status, 200, "the refused attempts kept the wait open: {}", seventh.body);
    app.hold_rate_limits().await;
    assert_eq!(retry_after(&attacker.sign_in(OWNER, PASSWORD).await), 4, "the refused attempts were counted");
    app.age_rate_limits(4).await;
    assert_eq!(attacker.sign_in(OWNER, PASSWORD).await.status, 303);
    let attacker = Client::new(&app, ATTACKER).await; // signed in: a new session, a new form
    fail_times(&app, &attacker, OWNER, 5).await;
    assert_eq!(retry_after(&attacker.sign_in(OWNER, PASSWORD).await), 1, "a success did not clear the failures");
}

async fn the_wait_doubles_with_each_failure_after_five_free_ones_the_same_for_an_unknown_address(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    for (email, address) in [(OWNER, ATTACKER), ("nobody@example.test", "203.0.113.8")] {
        let client = Client::new(&app, address).await;
        for attempt in 1..=5 {
            assert_eq!(client.sign_in(email, "a guess").await.status, 200, "{email}: free failure {attempt}");
        }
        app.hold_rate_limits().await;
        let mut waits = vec![retry_after(&client.sign_in(email, "a guess").await)];
        for _ in 0..11 {
            fail_times(&app, &client, email, 1).await;
            waits.push(retry_after(&client.sign_in(email, PASSWORD).await));
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900], "{email}");
    }
}

async fn twenty_sign_ins_in_a_row_all_succeed(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    let client = Client::new(&app, OWNERS_LAPTOP).await;
    for attempt in 1..=20 {
        let form = client.browser.get_with("/login", &[("X-Forwarded-For", OWNERS_LAPTOP)]).await;
        let page = client
            .browser
            .post_form_with(
                "/login",
                &[("csrf_token", &form.csrf_token()), ("email", OWNER), ("password", PASSWORD)],
                &[("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", OWNERS_LAPTOP)],
            )
            .await;
        assert_eq!(page.status, 303, "sign-in {attempt} was refused: {}", page.body);
    }
}

async fn a_client_failing_across_many_accounts_is_stopped_but_others_are_not(backend: Backend) {
    let app = app_behind_proxy(backend).await;
    // Ninety-nine failures over other accounts in the last quarter of an hour, as spraying makes.
    for _ in 0..99 {
        app.state.limiter.record(&format!("login:client:{ATTACKER}")).await.unwrap();
    }
    let sprayer = Client::new(&app, ATTACKER).await;
    assert_eq!(sprayer.sign_in("someone@example.test", "a guess").await.status, 200, "the hundredth failure");
    let wait = retry_after(&sprayer.sign_in(OWNER, PASSWORD).await);
    assert!((1..=900).contains(&wait), "{wait}");

    let office = Client::new(&app, OWNERS_LAPTOP).await;
    assert_eq!(office.sign_in(OWNER, PASSWORD).await.status, 303);
}

async fn wrong_current_passwords_on_the_account_forms_wait_like_sign_in(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let browser = app.sign_in(OWNER, PASSWORD).await;
    let new_password = "violet harbor quietly ninety";
    // The password change comes first and sets `new_password`, which the deletion then asks for.
    let forms =
        [("/account/password", "current_password", PASSWORD, 303), ("/account/delete", "password", new_password, 200)];
    for (path, field, right, done) in forms {
        let csrf = browser.get("/account").await.csrf_token();
        let post = |password: &'static str| {
            let (browser, csrf) = (&browser, csrf.clone());
            async move {
                browser
                    .post_form(path, &[("csrf_token", &csrf), (field, password), ("new_password", new_password)])
                    .await
            }
        };
        for attempt in 1..=5 {
            assert_eq!(post("a guess at it").await.status, 400, "{path}: wrong password {attempt}");
        }
        app.hold_rate_limits().await;
        assert_eq!(retry_after(&post("a guess at it").await), 1, "{path}");
        assert_eq!(retry_after(&post(right).await), 1, "{path}: the right password skipped the wait");

        app.age_rate_limits(1).await;
        let answer = post(right).await;

        assert_eq!(answer.status, done, "{path}: {}", answer.body);
    }
    assert_eq!(crate::support::count(app.db(), "SELECT count(*) FROM deletion_cases WHERE id > $1", 0).await, 1);
}

both_backends!(
    an_attacker_hammering_an_account_does_not_keep_its_owner_out,
    refused_attempts_neither_extend_the_wait_nor_count_as_failures,
    the_wait_doubles_with_each_failure_after_five_free_ones_the_same_for_an_unknown_address,
    twenty_sign_ins_in_a_row_all_succeed,
    a_client_failing_across_many_accounts_is_stopped_but_others_are_not,
    wrong_current_passwords_on_the_account_forms_wait_like_sign_in
);
