//! Passkeys over HTTP, answered by a software passkey exactly as a browser hands an
//! authenticator's answer to the page: adding one (after the current password, or as the set-up
//! a team's policy requires), signing in with it alone, using it after the password, removing it;
//! and every answer the relying party must refuse (another origin, another challenge, a second
//! use, a cloned key, another account's key, a disabled account), each changing nothing.

use serde_json::Value;
use watasu::accounts::policy::{SignInPolicies, SignInPolicy};

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp, authenticator::SoftPasskey, count, execute},
};
use watasu::sql;

const OWNER: &str = "owner@example.test";
const OTHER: &str = "other@example.test";

/// A browser on the app, and the origin its pages would have.
struct Client {
    browser: Browser,
    origin: String,
}

impl Client {
    fn new(app: &TestApp, origin: &str) -> Self {
        Self { browser: app.browser(), origin: origin.to_owned() }
    }

    async fn signed_in(app: &TestApp, origin: &str, email: &str) -> Self {
        let client = Self::new(app, origin);
        assert_eq!(client.browser.sign_in(email, PASSWORD).await.status, 303);
        client
    }

    /// Posts a form of `page` (its CSRF token) to `path`.
    async fn post(&self, page: &Page, path: &str, fields: &[(&str, &str)]) -> Page {
        let token = page.csrf_token();
        let mut all = vec![("csrf_token", token.as_str())];
        all.extend_from_slice(fields);
        self.browser.post_form(path, &all).await
    }

    /// Asks an options endpoint from `page`; the JSON answer and its status.
    async fn options(&self, page: &Page, path: &str, fields: &[(&str, &str)]) -> (u16, Value) {
        let answer = self.post(page, path, fields).await;
        (answer.status.as_u16(), serde_json::from_str(&answer.body).unwrap_or(Value::Null))
    }

    /// Adds `key` as a passkey named `name` from the account page; the last answer.
    async fn add_passkey(&self, key: &mut SoftPasskey, name: &str) -> Page {
        let account = self.browser.get("/account").await;
        let (status, options) =
            self.options(&account, "/account/passkeys/options", &[("name", name), ("password", PASSWORD)]).await;
        assert_eq!(status, 200, "{options}");
        let credential = key.register(&options, &self.origin);
        self.post(&account, "/account/passkeys", &[("name", name), ("credential", &credential)]).await
    }

    /// Signs in with `key` alone from the sign-in page, the page's origin being `origin`.
    async fn passkey_sign_in_from(&self, key: &mut SoftPasskey, origin: &str) -> Page {
        let login = self.browser.get("/login").await;
        let (status, options) = self.options(&login, "/login/passkey/options", &[]).await;
        assert_eq!(status, 200, "{options}");
        let credential = key.sign_in(&options, origin);
        self.post(&login, "/login/passkey", &[("credential", &credential)]).await
    }

    async fn passkey_sign_in(&self, key: &mut SoftPasskey) -> Page {
        let origin = self.origin.clone();
        self.passkey_sign_in_from(key, &origin).await
    }

    async fn is_signed_in(&self) -> bool {
        self.browser.get("/shares").await.status == 200
    }
}

/// An app on a domain with `OWNER` signed in and holding one passkey named "Phone".
async fn owner_with_passkey(backend: Backend) -> (TestApp, Client, SoftPasskey) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::signed_in(&app, &origin, OWNER).await;
    let mut key = SoftPasskey::new();
    let added = owner.add_passkey(&mut key, "Phone").await;
    assert_eq!(added.status, 200, "{}", added.body);
    (app, owner, key)
}

fn refused(page: &Page) -> bool {
    page.status == 400 && !page.texts("[data-passkey-error]").concat().is_empty()
}

async fn a_passkey_added_after_the_current_password_signs_in_alone_on_a_new_session_id(backend: Backend) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::signed_in(&app, &origin, OWNER).await;
    let account = owner.browser.get("/account").await;
    assert_eq!(account.attr("form[data-passkey=create]", "action").as_deref(), Some("/account/passkeys"));

    let (status, wrong) =
        owner.options(&account, "/account/passkeys/options", &[("name", "Phone"), ("password", "not it")]).await;
    assert_eq!(status, 400, "{wrong}");
    assert!(wrong["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(count(app.db(), "SELECT count(*) FROM passkey_ceremonies WHERE session_id > $1", 0).await, 0);
    let (status, options) =
        owner.options(&account, "/account/passkeys/options", &[("name", "Phone"), ("password", PASSWORD)]).await;
    assert_eq!(status, 200);
    assert_eq!(options["publicKey"]["rp"]["id"], "localhost");
    assert_eq!(options["publicKey"]["authenticatorSelection"]["residentKey"], "preferred");
    assert_eq!(options["publicKey"]["authenticatorSelection"]["userVerification"], "required");
    let mut key = SoftPasskey::new();
    let credential = key.register(&options, &origin);
    let added =
        owner.post(&account, "/account/passkeys", &[("name", "  My   phone "), ("credential", &credential)]).await;

    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(added.texts("[data-recovery-codes] code").len(), 10, "the first factor shows its recovery codes");
    let listed = owner.browser.get("/account").await;
    assert_eq!(listed.texts("[data-passkey-name]"), ["My phone"]);
    assert_eq!(listed.attr("[data-codes-left]", "data-codes-left").as_deref(), Some("10"));

    let laptop = Client::new(&app, &origin);
    let login = laptop.browser.get("/login").await;
    assert_eq!(login.attr("form[data-passkey=get]", "action").as_deref(), Some("/login/passkey"));
    let (_, options) = laptop.options(&login, "/login/passkey/options", &[]).await;
    assert_eq!(options["publicKey"]["allowCredentials"].as_array().map(Vec::len).unwrap_or(0), 0, "discoverable");
    let before = laptop.browser.cookie("watasu_session").expect("a session for the ceremony");
    let signed_in = laptop.post(&login, "/login/passkey", &[("credential", &key.sign_in(&options, &origin))]).await;

    assert_eq!((signed_in.status.as_u16(), signed_in.header("location")), (303, Some("/shares")), "{}", signed_in.body);
    assert_ne!(laptop.browser.cookie("watasu_session").unwrap(), before, "the session id did not change");
    assert!(laptop.is_signed_in().await);
    let used = "SELECT count(*) FROM passkeys WHERE last_used_at IS NOT NULL AND user_id > $1";
    assert_eq!(count(app.db(), used, 0).await, 1);
}

async fn answers_from_another_origin_for_another_challenge_or_used_once_already_are_refused(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    let stranger = Client::new(&app, &owner.origin);
    let port = owner.origin.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    for origin in
        [format!("http://localhost:{}", port + 1), "https://localhost".to_owned(), "https://evil.example".to_owned()]
    {
        let answer = stranger.passkey_sign_in_from(&mut key, &origin).await;
        assert!(refused(&answer), "{origin}: {} {}", answer.status, answer.body);
        assert!(!stranger.is_signed_in().await, "{origin} signed in");
    }

    let login = stranger.browser.get("/login").await;
    let (_, first) = stranger.options(&login, "/login/passkey/options", &[]).await;
    let answer_to_first = key.sign_in(&first, &owner.origin);
    let (_, _second) = stranger.options(&login, "/login/passkey/options", &[]).await;
    let stale = stranger.post(&login, "/login/passkey", &[("credential", &answer_to_first)]).await;
    assert!(refused(&stale), "an answer to a replaced challenge: {}", stale.body);

    let (_, options) = stranger.options(&login, "/login/passkey/options", &[]).await;
    let answer = key.sign_in(&options, &owner.origin);
    assert_eq!(stranger.post(&login, "/login/passkey", &[("credential", &answer)]).await.status, 303);
    let again = Client::new(&app, &owner.origin);
    let again_login = again.browser.get("/login").await;
    again.options(&again_login, "/login/passkey/options", &[]).await;
    let replayed = again.post(&again_login, "/login/passkey", &[("credential", &answer)]).await;
    assert!(refused(&replayed), "a replayed answer: {}", replayed.body);
    assert!(!again.is_signed_in().await);

    let mut other_key = SoftPasskey::new();
    let account = owner.browser.get("/account").await;
    let (_, options) =
        owner.options(&account, "/account/passkeys/options", &[("name", "Evil"), ("password", PASSWORD)]).await;
    let foreign = other_key.register(&options, "https://evil.example");
    let added = owner.post(&account, "/account/passkeys", &[("name", "Evil"), ("credential", &foreign)]).await;
    assert_eq!(added.status, 400, "a registration from another origin: {}", added.body);
    assert_eq!(count(app.db(), "SELECT count(*) FROM passkeys WHERE user_id > $1", 0).await, 1);
}

async fn a_cloned_passkey_whose_signature_count_went_back_is_refused(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    assert_eq!(Client::new(&app, &owner.origin).passkey_sign_in(&mut key).await.status, 303);
    key.reuse_counter();
    let clone = Client::new(&app, &owner.origin);
    let answer = clone.passkey_sign_in(&mut key).await;
    assert!(refused(&answer), "{}", answer.body);
    assert!(!clone.is_signed_in().await);
}

async fn a_passkey_stands_as_the_step_after_the_password_and_only_its_own_accounts(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    app.create_sender_with_password(OTHER, "Other", PASSWORD).await;
    let other = Client::signed_in(&app, &owner.origin, OTHER).await;
    let mut others_key = SoftPasskey::new();
    assert_eq!(other.add_passkey(&mut others_key, "Key").await.status, 200);

    let laptop = Client::new(&app, &owner.origin);
    let password_step = laptop.browser.sign_in(OWNER, PASSWORD).await;
    assert_eq!(password_step.header("location"), Some("/login/second-factor"));
    let pending_id = laptop.browser.cookie("watasu_session").unwrap();
    let step = laptop.browser.get("/login/second-factor").await;
    assert_eq!(step.attr("form[data-passkey=get]", "action").as_deref(), Some("/login/second-factor/passkey"));
    let (status, options) = laptop.options(&step, "/login/second-factor/passkey/options", &[]).await;
    assert_eq!(status, 200, "{options}");
    let allowed = options["publicKey"]["allowCredentials"].as_array().unwrap().len();
    assert_eq!(allowed, 1, "only the owner's passkey is offered");

    let wrong = laptop
        .post(&step, "/login/second-factor/passkey", &[("credential", &others_key.sign_in(&options, &owner.origin))])
        .await;
    assert!(refused(&wrong), "another account's passkey: {}", wrong.body);
    assert!(!laptop.is_signed_in().await);
    let (_, options) = laptop.options(&step, "/login/second-factor/passkey/options", &[]).await;
    let answer = laptop
        .post(&step, "/login/second-factor/passkey", &[("credential", &key.sign_in(&options, &owner.origin))])
        .await;

    assert_eq!(answer.header("location"), Some("/shares"), "{}", answer.body);
    assert_ne!(laptop.browser.cookie("watasu_session").unwrap(), pending_id, "the session id did not change");
    assert!(laptop.is_signed_in().await);
    assert_eq!(count(app.db(), "SELECT count(*) FROM pending_sign_ins WHERE session_id > $1", 0).await, 0);
}

async fn the_teams_policy_lets_an_account_set_up_a_passkey_instead_of_an_app(backend: Backend) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    let policy = SignInPolicy { require_second_factor: true, passwords_allowed: true };
    SignInPolicies::new(app.db().clone()).set(policy, None).await.unwrap();
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let stranger = Client::new(&app, &origin);
    let login = stranger.browser.get("/login").await;
    let (status, refused) = stranger.options(&login, "/login/enrol/passkey/options", &[("name", "Phone")]).await;
    assert_eq!((status, refused["location"].as_str()), (409, Some("/login?expired=1")), "{refused}");

    let client = Client::new(&app, &origin);
    assert_eq!(client.browser.sign_in(OWNER, PASSWORD).await.header("location"), Some("/login/enrol"));
    let setup = client.browser.get("/login/enrol").await;
    assert_eq!(setup.attr("form[data-passkey=create]", "action").as_deref(), Some("/login/enrol/passkey"));
    let (status, options) = client.options(&setup, "/login/enrol/passkey/options", &[("name", "Phone")]).await;
    assert_eq!(status, 200, "{options}");
    let mut key = SoftPasskey::new();
    let credential = key.register(&options, &origin);
    let done = client.post(&setup, "/login/enrol/passkey", &[("name", "Phone"), ("credential", &credential)]).await;

    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.texts("[data-recovery-codes] code").len(), 10);
    assert!(client.is_signed_in().await);
    let later = Client::new(&app, &origin);
    assert_eq!(later.passkey_sign_in(&mut key).await.header("location"), Some("/shares"), "a passkey meets the policy");
}

async fn a_disabled_account_cannot_sign_in_with_its_passkey(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    execute(app.db(), sql!("UPDATE users SET disabled_at = " now " WHERE id > $1"), 0).await;
    let client = Client::new(&app, &owner.origin);
    let answer = client.passkey_sign_in(&mut key).await;
    assert!(refused(&answer), "{}", answer.body);
    assert!(!client.is_signed_in().await);
}

async fn removing_a_passkey_needs_the_current_password_and_then_it_no_longer_signs_in(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    let account = owner.browser.get("/account").await;
    let action = account.attr("[data-passkey-id] form", "action").unwrap();
    let field = format!("password-{}", action.split('/').nth(3).unwrap());

    let wrong = owner.post(&account, &action, &[("password", "not it")]).await;
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.texts("[data-passkey-name]"), ["Phone"], "{field}: kept after a wrong password");
    assert!(!wrong.texts("[data-passkey-id] [role=alert]").is_empty());
    let removed = owner.post(&account, &action, &[("password", PASSWORD)]).await;
    assert_eq!(removed.header("location"), Some("/account?saved=passkey-removed#passkeys"));

    let page = owner.browser.get("/account").await;
    assert!(page.texts("[data-passkey-name]").is_empty());
    assert!(page.attr("[data-codes-left]", "data-codes-left").is_none(), "recovery codes outlived the last factor");
    let answer = Client::new(&app, &owner.origin).passkey_sign_in(&mut key).await;
    assert!(refused(&answer), "a removed passkey: {}", answer.body);
    assert_eq!(owner.post(&page, &action, &[("password", PASSWORD)]).await.status, 404);
}

async fn one_passkey_belongs_to_one_account_and_an_admins_reset_removes_it(backend: Backend) {
    let (app, owner, mut key) = owner_with_passkey(backend).await;
    app.create_sender_with_password(OTHER, "Other", PASSWORD).await;
    let other = Client::signed_in(&app, &owner.origin, OTHER).await;
    let taken = other.add_passkey(&mut key, "Mine now").await;
    assert_eq!(taken.status, 400, "{}", taken.body);
    assert_eq!(count(app.db(), "SELECT count(*) FROM passkeys WHERE user_id > $1", 0).await, 1);

    let owner_user = app
        .state
        .services
        .accounts
        .active_by_email(&watasu::accounts::EmailAddress::parse(OWNER).unwrap())
        .await
        .unwrap()
        .unwrap();
    let reset = app.state.services.factors.reset(&owner_user, None, None).await.unwrap();
    assert_eq!(reset.removed.passkeys, 1);
    assert!(!owner.is_signed_in().await, "the reset ended the owner's sessions");
    let answer = Client::new(&app, &owner.origin).passkey_sign_in(&mut key).await;
    assert!(refused(&answer), "{}", answer.body);
}

async fn without_javascript_the_passkey_button_says_it_needs_it_and_changes_nothing(backend: Backend) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |_| {}).await;
    let client = Client::new(&app, &origin);
    let login = client.browser.get("/login").await;
    let answer = client.post(&login, "/login/passkey", &[("credential", "")]).await;
    assert!(refused(&answer), "{}", answer.body);
    assert!(answer.texts("[data-passkey-error]").concat().contains("JavaScript"), "{}", answer.body);
    assert!(!client.is_signed_in().await);
}

async fn a_team_on_single_sign_on_only_cannot_use_passkeys_it_added_before(backend: Backend) {
    let (app, origin) = TestApp::spawn_for_passkeys(backend, |s| {
        // Never reached: passwords and passkeys are judged without the provider.
        s.oidc.issuer = Some("http://127.0.0.1:9".to_owned());
        s.oidc.client_id = Some("watasu".to_owned());
        s.oidc.client_secret = Some(watasu::secret::SecretString::new("a secret"));
    })
    .await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let owner = Client::signed_in(&app, &origin, OWNER).await;
    let mut key = SoftPasskey::new();
    assert_eq!(owner.add_passkey(&mut key, "Phone").await.status, 200);
    let policy = SignInPolicy { require_second_factor: false, passwords_allowed: false };
    SignInPolicies::new(app.db().clone()).set(policy, None).await.unwrap();

    let login = Client::new(&app, &origin).browser.get("/login").await;
    assert!(login.attr("form[data-passkey]", "action").is_none(), "a passkey button on single sign-on only");
    let account = owner.browser.get("/account").await;
    assert_eq!(account.texts("[data-passkeys-off]").len(), 1);
    let (status, _) = owner.options(&account, "/login/passkey/options", &[]).await;
    assert_eq!(status, 404, "a passkey sign-in started on single sign-on only");
}

async fn passkey_sign_ins_started_without_a_session_are_limited_per_client(backend: Backend) {
    let (app, _origin) =
        TestApp::spawn_for_passkeys(backend, |s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let app = &app;
    let from = |address: &'static str| async move {
        let browser = app.browser();
        let login = browser.get("/login").await;
        let headers = [("Sec-Fetch-Site", "same-origin"), ("X-Forwarded-For", address)];
        browser
            .post_form_with("/login/passkey/options", &[("csrf_token", &login.csrf_token())], &headers)
            .await
            .status
            .as_u16()
    };
    let sessions = || count(app.db(), "SELECT count(*) FROM sessions WHERE id > $1", 0);

    let limit = watasu::services::passkeys::ANONYMOUS_STARTS[0].max;
    let mut answers = Vec::new();
    for _ in 0..limit + 10 {
        answers.push(from("203.0.113.50").await);
    }

    let started = limit as usize;
    assert_eq!(answers.iter().filter(|s| **s == 200).count(), started, "{answers:?}");
    assert!(answers[started..].iter().all(|s| *s == 429), "{answers:?}");
    assert_eq!(sessions().await, limit, "refused starts made rows");
    assert_eq!(count(app.db(), "SELECT count(*) FROM passkey_ceremonies WHERE session_id > $1", 0).await, limit);
    // Another client is not held back by it.
    assert_eq!(from("198.51.100.60").await, 200);
}

async fn on_an_ip_address_passkeys_are_not_offered_and_say_why(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password(OWNER, "Owner", PASSWORD).await;
    let client = Client::new(&app, &app.base);
    let login = client.browser.get("/login").await;
    assert!(login.attr("form[data-passkey]", "action").is_none(), "a passkey button on an IP address");
    let (status, _) = client.options(&login, "/login/passkey/options", &[]).await;
    assert_eq!(status, 404);
    assert_eq!(client.browser.sign_in(OWNER, PASSWORD).await.status, 303);
    let account = client.browser.get("/account").await;
    assert_eq!(account.texts("[data-passkeys-off]").len(), 1, "{}", account.body);
    assert!(account.attr("form[data-passkey]", "action").is_none());
}

both_backends!(
    a_passkey_added_after_the_current_password_signs_in_alone_on_a_new_session_id,
    answers_from_another_origin_for_another_challenge_or_used_once_already_are_refused,
    a_cloned_passkey_whose_signature_count_went_back_is_refused,
    a_passkey_stands_as_the_step_after_the_password_and_only_its_own_accounts,
    the_teams_policy_lets_an_account_set_up_a_passkey_instead_of_an_app,
    a_disabled_account_cannot_sign_in_with_its_passkey,
    removing_a_passkey_needs_the_current_password_and_then_it_no_longer_signs_in,
    one_passkey_belongs_to_one_account_and_an_admins_reset_removes_it,
    without_javascript_the_passkey_button_says_it_needs_it_and_changes_nothing,
    a_team_on_single_sign_on_only_cannot_use_passkeys_it_added_before,
    passkey_sign_ins_started_without_a_session_are_limited_per_client,
    on_an_ip_address_passkeys_are_not_offered_and_say_why
);
