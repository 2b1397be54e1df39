//! Single sign-on against a real OpenID provider (oidc-provider, tests/it/support/oidc): accounts
//! by verified address, creation for allowed domains, invitations, every refusal as a friendly
//! page that changes nothing, the provider down, and the switch to single sign-on only.

use watasu::accounts::{EmailAddress, Role, Users, invitations::Invitations};

use crate::{
    both_backends,
    support::{
        Backend, Browser, PASSWORD, Page, TestApp, count,
        oidc::{CLIENT_ID, CLIENT_SECRET, Consent, Mode, app_with_provider, drive},
        process::run_watasu,
    },
};

const SESSION_COOKIE: &str = "watasu_session";

fn reason(page: &Page) -> Option<String> {
    page.attr("[data-reason]", "data-reason")
}

/// Whether the browser is signed in: the dashboard answers instead of sending it to sign in.
async fn signed_in(browser: &Browser) -> bool {
    browser.get("/shares").await.status == 200
}

async fn user(app: &TestApp, email: &str) -> Option<watasu::accounts::User> {
    Users::new(app.db().clone()).find_by_email(&EmailAddress::parse(email).unwrap()).await.unwrap()
}

/// The refusal page of a sign-in as `login`: its status and reason, and the way back to sign-in.
async fn refused(app: &TestApp, login: &str) -> (u16, Option<String>, Browser) {
    let browser = app.browser();
    let callback = drive(&browser, login, Consent::Allow).await;
    let page = browser.get(&callback).await;
    assert_eq!(page.attr("a[href='/login']", "href").as_deref(), Some("/login"), "no way back: {}", page.body);
    (page.status.as_u16(), reason(&page), browser)
}

async fn an_allowed_domain_gets_a_sender_account_on_a_new_session_id(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;
    assert!(browser.cookie(SESSION_COOKIE).is_none(), "starting the sign-in made a session");

    let back = browser.get(&callback).await;

    assert_eq!((back.status.as_u16(), back.header("location")), (303, Some("/shares")), "{}", back.body);
    assert!(signed_in(&browser).await);
    // Signing in again from this browser moves its session to a new id.
    let before = browser.cookie(SESSION_COOKIE).unwrap();
    let again = drive(&browser, "alice@corp.test", Consent::Allow).await;
    assert_eq!(browser.get(&again).await.header("location"), Some("/shares"));
    assert_ne!(browser.cookie(SESSION_COOKIE).unwrap(), before, "the session id did not change");
    let alice = user(&app, "alice@corp.test").await.expect("an account was created");
    assert_eq!((alice.role, alice.display_name.as_str()), (Role::Sender, "Test alice"));
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM users WHERE id = $1 AND sso_subject = 'alice@corp.test'", alice.id).await,
        1
    );
    let old = Browser::new(&app.base);
    old.set_cookie(SESSION_COOKIE, &before);
    assert!(!signed_in(&old).await, "the old session id still works");
    // The account has no usable password.
    assert_eq!(app.browser().sign_in("alice@corp.test", "").await.status, 200);
}

async fn a_forged_state_is_refused_and_changes_nothing(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;
    let code = callback.split("code=").nth(1).unwrap().split('&').next().unwrap().to_owned();

    let forged = browser.get(&format!("/login/sso/callback?code={code}&state={}", "ab".repeat(32))).await;

    assert_eq!((forged.status.as_u16(), reason(&forged).as_deref()), (400, Some("unknown_state")), "{}", forged.body);
    assert!(!signed_in(&browser).await);
    assert!(user(&app, "alice@corp.test").await.is_none());
    // Another browser cannot use this browser's state either.
    let other = app.browser();
    other.get("/login/sso").await;
    assert_eq!(reason(&other.get(&callback).await).as_deref(), Some("unknown_state"));
    // The real answer still works once, and only once.
    assert_eq!(browser.get(&callback).await.status, 303);
    assert_eq!(reason(&browser.get(&callback).await).as_deref(), Some("unknown_state"), "a state worked twice");
}

async fn a_started_sign_in_waits_ten_minutes_in_a_sealed_cookie_and_stores_nothing(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();

    let start = browser.get("/login/sso").await;

    assert_eq!(start.status, 303);
    let state = start.header("location").unwrap().split("state=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let cookie = start
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("watasu_sso="));
    let cookie = cookie.expect("the sign-in is remembered in its cookie");
    for attribute in ["Max-Age=600", "HttpOnly", "SameSite=Lax"] {
        assert!(cookie.contains(attribute), "{attribute} missing: {cookie}");
    }
    assert!(!cookie.contains(&state), "the cookie shows the state: {cookie}");
    assert!(browser.cookie(SESSION_COOKIE).is_none(), "starting a sign-in made a session");
    assert_eq!(count(app.db(), "SELECT count(*) FROM sessions WHERE id > $1", 0).await, 0);
    // The callback takes it: the answer is accepted once.
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;
    assert_eq!(browser.get(&callback).await.status, 303);
    assert!(browser.cookie("watasu_sso").is_none_or(|c| c.is_empty()), "the cookie outlived its answer");
}

async fn a_replayed_code_is_refused_by_the_provider(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;
    assert_eq!(browser.get(&callback).await.status, 303);
    let code = callback.split("code=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let thief = app.browser();
    let start = thief.get("/login/sso").await;
    let state = start.header("location").unwrap().split("state=").nth(1).unwrap().split('&').next().unwrap().to_owned();

    let replayed = thief.get(&format!("/login/sso/callback?code={code}&state={state}")).await;

    assert_eq!(
        (replayed.status.as_u16(), reason(&replayed).as_deref()),
        (400, Some("code_refused")),
        "{}",
        replayed.body
    );
    assert!(!signed_in(&thief).await);
}

async fn tokens_for_another_audience_issuer_or_sign_in_badly_signed_expired_or_from_the_future_are_refused(
    backend: Backend,
) {
    let modes = [
        Mode::WrongAudience,
        Mode::WrongIssuer,
        Mode::WrongNonce,
        Mode::BadSignature,
        Mode::Expired,
        Mode::FromTheFuture,
    ];
    for mode in modes {
        let (app, _provider) = app_with_provider(backend, mode, &["corp.test"]).await;
        let (status, why, browser) = refused(&app, "alice@corp.test").await;
        assert_eq!((status, why.as_deref()), (403, Some("token_refused")), "{mode:?}");
        assert!(!signed_in(&browser).await, "{mode:?}");
        assert!(user(&app, "alice@corp.test").await.is_none(), "{mode:?} created an account");
    }
}

async fn a_provider_clock_half_a_minute_off_either_way_is_tolerated(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::WithinSkew, &["corp.test"]).await;
    let browser = app.browser();
    let callback = drive(&browser, "alice@corp.test", Consent::Allow).await;

    assert_eq!(browser.get(&callback).await.header("location"), Some("/shares"));
    assert!(signed_in(&browser).await);
}

async fn denied_consent_leads_back_to_sign_in_with_nothing_changed(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();
    let callback = drive(&browser, "alice@corp.test", Consent::Deny).await;
    assert!(callback.contains("error=access_denied"), "{callback}");
    let page = browser.get(&callback).await;
    assert_eq!((page.status.as_u16(), reason(&page).as_deref()), (403, Some("denied")), "{}", page.body);
    assert!(user(&app, "alice@corp.test").await.is_none());
}

async fn an_unverified_address_never_matches_an_account(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    app.create_sender("alice@corp.test", "Alice").await;
    let (status, why, browser) = refused(&app, "unverified/alice@corp.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("email_unverified")));
    assert!(!signed_in(&browser).await);
}

async fn a_disabled_account_is_refused(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let bob = app.create_sender("bob@corp.test", "Bob").await;
    let admin = app.create_admin("admin@corp.test").await;
    assert!(Users::new(app.db().clone()).disable(bob, admin).await.unwrap());
    let (status, why, browser) = refused(&app, "bob@corp.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("disabled")));
    assert!(!signed_in(&browser).await);
}

async fn an_address_outside_the_allowed_domains_without_an_invitation_is_refused(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let (status, why, _) = refused(&app, "carol@elsewhere.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("no_account")));
    assert!(user(&app, "carol@elsewhere.test").await.is_none());
}

async fn an_open_invitation_is_accepted_by_single_sign_on(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &[]).await;
    let admin = app.create_admin("admin@corp.test").await;
    let email = EmailAddress::parse("dave@partner.test").unwrap();
    Invitations::new(app.db().clone()).create(&email, Role::Sender, admin, watasu::i18n::Lang::Ja).await.unwrap();
    let browser = app.browser();
    let callback = drive(&browser, "dave@partner.test", Consent::Allow).await;
    assert_eq!(browser.get(&callback).await.status, 303);
    assert!(signed_in(&browser).await);
    let dave = user(&app, "dave@partner.test").await.expect("the invitation made the account");
    assert_eq!(dave.role, Role::Sender);
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM invitations WHERE used_at IS NOT NULL AND invited_by = $1", admin).await,
        1
    );
}

async fn the_same_address_with_another_subject_cannot_take_the_account_over(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let first = app.browser();
    let callback = drive(&first, "alice@corp.test", Consent::Allow).await;
    assert_eq!(first.get(&callback).await.status, 303);
    let (status, why, browser) = refused(&app, "other/alice@corp.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("subject_mismatch")));
    assert!(!signed_in(&browser).await);
}

async fn an_account_with_a_password_is_linked_only_from_a_browser_signed_in_to_it(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let admin_id = app.create_admin("admin@corp.test").await;
    let linked = "SELECT count(*) FROM users WHERE id = $1 AND sso_subject IS NOT NULL";

    let (status, why, stranger) = refused(&app, "admin@corp.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("link_needs_sign_in")));
    assert!(!signed_in(&stranger).await);
    assert_eq!(count(app.db(), linked, admin_id).await, 0);

    let owner = app.sign_in("admin@corp.test", PASSWORD).await;
    let callback = drive(&owner, "admin@corp.test", Consent::Allow).await;
    let back = owner.get(&callback).await;
    assert_eq!(back.header("location"), Some("/shares"), "{}", back.body);
    assert_eq!(count(app.db(), linked, admin_id).await, 1);
    let later = app.browser();
    let callback = drive(&later, "admin@corp.test", Consent::Allow).await;
    assert_eq!(later.get(&callback).await.header("location"), Some("/shares"));
    assert!(signed_in(&later).await);
}

async fn an_account_outside_the_allowed_domains_is_never_linked(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let id = app.create_sender_with_password("erin@elsewhere.test", "Erin", PASSWORD).await;
    let erin = app.sign_in("erin@elsewhere.test", PASSWORD).await;

    let callback = drive(&erin, "erin@elsewhere.test", Consent::Allow).await;
    let page = erin.get(&callback).await;

    assert_eq!((page.status.as_u16(), reason(&page).as_deref()), (403, Some("no_account")), "{}", page.body);
    assert_eq!(count(app.db(), "SELECT count(*) FROM users WHERE id = $1 AND sso_subject IS NOT NULL", id).await, 0);
}

async fn an_email_verified_sent_as_a_string_is_refused_with_a_page_not_a_503(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::StringEmailVerified, &["corp.test"]).await;
    let (status, why, browser) = refused(&app, "alice@corp.test").await;
    assert_eq!((status, why.as_deref()), (403, Some("token_refused")));
    assert!(!signed_in(&browser).await);
    assert!(user(&app, "alice@corp.test").await.is_none());
}

async fn the_provider_down_is_a_503_page_while_passwords_still_work(backend: Backend) {
    let (app, mut provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    app.create_sender_with_password("pat@corp.test", "Pat", PASSWORD).await;
    provider.stop();
    let browser = app.browser();
    let start = browser.get("/login/sso").await;
    assert_eq!((start.status.as_u16(), reason(&start).as_deref()), (503, Some("unavailable")), "{}", start.body);
    assert_eq!(browser.sign_in("pat@corp.test", PASSWORD).await.status, 303);
    assert!(signed_in(&browser).await);
}

async fn while_the_provider_hangs_no_sign_in_queues_behind_another_and_its_failure_stands_a_while(backend: Backend) {
    use futures_util::FutureExt;
    // A provider that takes connections and never answers them.
    let provider = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", provider.local_addr().unwrap());
    let app = TestApp::spawn_with(backend, |s| {
        s.oidc.issuer = Some(issuer);
        s.oidc.client_id = Some(CLIENT_ID.to_owned());
        s.oidc.client_secret = Some(watasu::secret::SecretString::new(CLIENT_SECRET));
        s.oidc.name = "Test IdP".to_owned();
    })
    .await;
    let first = app.browser();
    let hanging = tokio::spawn(async move { first.get("/login/sso").await });
    let (held, _) = provider.accept().await.unwrap();

    let second = app.browser().get("/login/sso").await;

    assert_eq!((second.status.as_u16(), reason(&second).as_deref()), (503, Some("unavailable")), "{}", second.body);
    assert!(!hanging.is_finished(), "the first sign-in was answered before its provider was");
    drop(held);
    assert_eq!(hanging.await.unwrap().status, 503);
    let third = app.browser().get("/login/sso").await;
    assert_eq!((third.status.as_u16(), reason(&third).as_deref()), (503, Some("unavailable")));
    assert!(provider.accept().now_or_never().is_none(), "the provider was asked again at once");
    assert_eq!(count(app.db(), "SELECT count(*) FROM sessions WHERE id > $1", 0).await, 0);
}

async fn the_token_endpoint_down_after_discovery_is_a_503_page(backend: Backend) {
    let (app, mut provider) = app_with_provider(backend, Mode::Normal, &["corp.test"]).await;
    let browser = app.browser();
    let start = browser.get("/login/sso").await;
    assert_eq!(start.status, 303);
    let state = start.header("location").unwrap().split("state=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    provider.stop();
    let page = browser.get(&format!("/login/sso/callback?code=whatever&state={state}")).await;
    assert_eq!((page.status.as_u16(), reason(&page).as_deref()), (503, Some("unavailable")), "{}", page.body);
}

async fn with_passwords_off_only_single_sign_on_works_until_the_cli_turns_them_back_on(backend: Backend) {
    let (app, _provider) = app_with_provider(backend, Mode::Normal, &[]).await;
    app.create_admin("admin@corp.test").await;
    let admin = app.sign_in("admin@corp.test", PASSWORD).await;
    // A visitor whose sign-in page was open before the switch.
    let visitor = app.browser();
    let open_form = visitor.get("/login").await;
    let team = admin.get("/team").await;
    assert_eq!(team.attr("[data-passwords]", "data-passwords").as_deref(), Some("on"));
    let off =
        admin.post_form("/team/sign-in-methods", &[("csrf_token", &team.csrf_token()), ("passwords", "off")]).await;
    assert_eq!(off.header("location"), Some("/team?done=sign-in-methods"), "{}", off.body);
    assert_eq!(admin.get("/team").await.attr("[data-passwords]", "data-passwords").as_deref(), Some("off"));

    let login = visitor.get("/login").await;
    assert!(login.attr("input[name=password]", "name").is_none(), "the password form is still offered");
    assert_eq!(login.attr("a[data-sso]", "href").as_deref(), Some("/login/sso"));
    let fields =
        [("csrf_token", open_form.csrf_token()), ("email", "admin@corp.test".into()), ("password", PASSWORD.into())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = visitor.post_form("/login", &fields).await;
    assert_eq!((refused.status.as_u16(), reason(&refused).as_deref()), (403, Some("passwords_off")));
    assert!(!signed_in(&visitor).await);
    assert!(admin.get("/account").await.attr("[data-passwords]", "data-passwords").is_some());

    let data_dir = app.data_dir.path().to_str().unwrap().to_owned();
    let url = app.state.config.database_url.clone();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_watasu(&["sign-in", "allow-passwords", "--data-dir", &data_dir, "--database-url", &url], &[])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("password sign-in is on again"), "{stdout}");
    assert_eq!(app.browser().sign_in("admin@corp.test", PASSWORD).await.status, 303);
}

async fn passwords_cannot_be_turned_off_without_single_sign_on(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = admin.get("/team").await;
    assert!(team.attr("form[action='/team/sign-in-methods']", "action").is_none());
    let off =
        admin.post_form("/team/sign-in-methods", &[("csrf_token", &team.csrf_token()), ("passwords", "off")]).await;
    assert_eq!(off.status, 400, "{}", off.body);
    assert_eq!(app.browser().sign_in("admin@example.test", PASSWORD).await.status, 303);
    assert_eq!(app.browser().get("/login/sso").await.status, 404);
}

both_backends!(
    an_allowed_domain_gets_a_sender_account_on_a_new_session_id,
    a_forged_state_is_refused_and_changes_nothing,
    a_started_sign_in_waits_ten_minutes_in_a_sealed_cookie_and_stores_nothing,
    a_replayed_code_is_refused_by_the_provider,
    tokens_for_another_audience_issuer_or_sign_in_badly_signed_expired_or_from_the_future_are_refused,
    a_provider_clock_half_a_minute_off_either_way_is_tolerated,
    denied_consent_leads_back_to_sign_in_with_nothing_changed,
    an_unverified_address_never_matches_an_account,
    a_disabled_account_is_refused,
    an_address_outside_the_allowed_domains_without_an_invitation_is_refused,
    an_open_invitation_is_accepted_by_single_sign_on,
    the_same_address_with_another_subject_cannot_take_the_account_over,
    an_account_with_a_password_is_linked_only_from_a_browser_signed_in_to_it,
    an_account_outside_the_allowed_domains_is_never_linked,
    an_email_verified_sent_as_a_string_is_refused_with_a_page_not_a_503,
    the_provider_down_is_a_503_page_while_passwords_still_work,
    while_the_provider_hangs_no_sign_in_queues_behind_another_and_its_failure_stands_a_while,
    the_token_endpoint_down_after_discovery_is_a_503_page,
    with_passwords_off_only_single_sign_on_works_until_the_cli_turns_them_back_on,
    passwords_cannot_be_turned_off_without_single_sign_on
);
