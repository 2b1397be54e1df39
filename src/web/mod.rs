//! The HTTP layer: routes, handlers, template structs, middleware and error pages. It parses
//! requests into domain types and calls the domain; it holds no SQL.

mod account;
mod assets;
mod auth;
mod back_link;
mod bearer;
mod cookie_scope;
mod dashboard;
mod deletion;
mod dev_outbox;
mod error;
mod extract;
mod field_error;
mod form;
mod health;
mod maintenance;
mod metrics;
pub mod middleware;
mod nav;
mod pages;
mod passkeys;
mod paths;
mod recipient;
mod second_factor;
mod sso;
mod team;
pub(crate) mod uploads;

use std::{ops::Deref, sync::Arc};

use poem::{Endpoint, EndpointExt, Route, endpoint::BoxEndpoint, get, middleware::CookieJarManager};

pub use error::AppError;
pub use extract::{Admin, SignedIn};
pub use pages::{Chrome, render, render_with, see_other};
pub use recipient::content_disposition;

use crate::{
    config::{BasePath, Config},
    services::Services,
};

/// Everything a handler may need, shared by all requests.
#[derive(Clone)]
pub struct AppState(Arc<AppStateInner>);

pub struct AppStateInner {
    /// Every use case; handlers call these and nothing below them.
    pub services: Services,
    pub config: Config,
    pub assets_version: String,
}

impl AppState {
    pub fn new(config: Config, services: Services) -> Self {
        Self(Arc::new(AppStateInner { services, config, assets_version: assets::assets_version() }))
    }
}

impl Deref for AppState {
    type Target = AppStateInner;
    fn deref(&self) -> &AppStateInner {
        &self.0
    }
}

/// The whole application as one endpoint: routes inside the middleware stack.
pub fn app(state: AppState) -> impl Endpoint + 'static {
    let https = state.config.is_https();
    let origin: Arc<str> = state.config.origin().into();
    let trusted = Arc::new(middleware::TrustedProxies {
        networks: state.config.settings.trusted_proxies.clone(),
        header: state.config.settings.client_ip_header,
    });
    let session_settings = middleware::SessionSettings {
        sessions: state.services.browsers.clone(),
        cookies: cookie_scope::CookieScope::new(&state.config),
        max_age: state.config.settings.session_max_age,
        form_key: state.services.parts().secret_key.derive("watasu anonymous form token v1"),
    };
    let access_time_gc = state.config.settings.access_time_gc.then(|| state.services.gc.clone());
    let request_metrics = state.services.telemetry.metrics().clone();

    let dev_outbox = state.config.settings.smtp_url.is_none();
    let routes = Route::new()
        .at("/", get(pages::home))
        .at("/logout", poem::post(auth::logout))
        .at("/login", get(auth::login_page).post(auth::login_submit))
        .at("/setup/:token", get(auth::setup_page).post(auth::setup_submit))
        // Second factor: the sign-in's code step and set-up, the account's app, the team's policy.
        .at("/login/second-factor", get(second_factor::verify_page).post(second_factor::verify_submit))
        .at("/login/enrol", get(second_factor::enrol_page).post(second_factor::enrol_submit))
        .at("/account/totp", get(second_factor::setup_page).post(second_factor::start_setup))
        .at("/account/totp/confirm", poem::post(second_factor::confirm_setup))
        .at("/account/totp/remove", poem::post(second_factor::remove))
        .at("/account/recovery-codes", poem::post(second_factor::renew_codes))
        // Passkeys: signing in alone or after a password, and the account's list.
        .at("/login/passkey/options", poem::post(passkeys::sign_in_options))
        .at("/login/passkey", poem::post(passkeys::sign_in))
        .at("/login/second-factor/passkey/options", poem::post(passkeys::second_factor_options))
        .at("/login/second-factor/passkey", poem::post(passkeys::second_factor))
        .at("/login/enrol/passkey/options", poem::post(passkeys::enrolment_options))
        .at("/login/enrol/passkey", poem::post(passkeys::enrol))
        .at("/account/passkeys/options", poem::post(passkeys::registration_options))
        .at("/account/passkeys", poem::post(passkeys::register))
        .at("/account/passkeys/:id/remove", poem::post(passkeys::remove))
        .at("/team/sign-in-policy", poem::post(team::set_sign_in_policy))
        .at("/team/:id/reset-factors", get(team::confirm_reset_factors).post(team::reset_factors))
        // Single sign-on: the start, the provider's answer, and the team's sign-in methods.
        .at("/login/sso", get(sso::start))
        .at("/login/sso/callback", get(sso::callback))
        .at("/team/sign-in-methods", poem::post(sso::set_methods))
        .at("/account", get(account::account_page))
        .at("/account/time-zone", poem::post(account::set_time_zone))
        .at("/account/password", poem::post(account::change_password))
        .at("/team", get(team::show))
        .at("/team/invite", poem::post(team::invite))
        .at("/team/:id/disable", get(team::confirm_disable).post(team::disable))
        .at("/admin/maintenance", get(maintenance::admin::list_runs))
        .at("/admin/maintenance/:id", get(maintenance::admin::show_run))
        .at("/invite/:token", get(team::invitation_page).post(team::accept))
        .at("/account/delete", poem::post(deletion::delete_own))
        .at("/team/:id/delete", get(team::confirm_delete).post(deletion::delete_member))
        .at("/admin/deletions", get(deletion::list))
        .at("/admin/deletions/:reference", get(deletion::show))
        .at("/admin/deletions/:reference/retry", poem::post(deletion::retry))
        .at("/shares", get(dashboard::list))
        .at("/shares/new", get(dashboard::new_share_form).post(dashboard::upload))
        .at("/shares/:id", get(dashboard::show))
        .at("/shares/:id/live", get(dashboard::live))
        .at("/shares/:id/created", get(dashboard::created))
        .at("/shares/:id/revoke", get(dashboard::revoke_confirm).post(dashboard::revoke))
        .at("/shares/:id/link", poem::post(dashboard::renew_link))
        .at("/shares/:id/unlock", poem::post(dashboard::unlock))
        .at("/uploads", poem::RouteMethod::new().options(uploads::options).post(uploads::create))
        .at(
            "/uploads/:id",
            poem::RouteMethod::new()
                .head(uploads::upload)
                .patch(uploads::upload)
                .delete(uploads::upload)
                .post(uploads::upload),
        )
        .at("/s/:token", get(recipient::landing).around(recipient::recipient_refusals))
        .at("/s/:token/email", poem::post(recipient::request_code).around(recipient::recipient_refusals))
        .at("/s/:token/code", poem::post(recipient::submit_code).around(recipient::recipient_refusals))
        .at("/s/:token/code/new", poem::post(recipient::resend_code).around(recipient::recipient_refusals))
        .at("/s/:token/address", poem::post(recipient::other_address).around(recipient::recipient_refusals))
        .at("/s/:token/download", poem::post(recipient::download).around(recipient::recipient_refusals))
        .at(
            "/s/:token/file",
            get(recipient::claimed_file).head(recipient::claimed_file).around(recipient::recipient_refusals),
        )
        .at("/healthz", get(health::healthz))
        .at("/readyz", get(health::readyz))
        .at("/static/:version/:name", get(assets::serve_asset))
        .at("/favicon.ico", get(assets::favicon));
    // Only with a token configured: otherwise the trigger does not exist (404).
    let routes = if state.config.settings.maintenance_token.is_some() {
        routes
            .at("/maintenance/runs", poem::post(maintenance::api::trigger))
            .at("/maintenance/runs/:id", get(maintenance::api::show))
    } else {
        routes
    };
    // Only without an SMTP relay: the page shows mails that otherwise went to real inboxes.
    let routes = if dev_outbox { routes.at("/dev/outbox", get(dev_outbox::show)) } else { routes };
    // Only with a token configured: otherwise /metrics is an unknown path (404).
    let routes = if state.config.settings.metrics_token.is_some() {
        routes.at("/metrics", get(metrics::scrape))
    } else {
        routes
    };

    let base = Arc::new(state.config.base_path.clone());
    let lang_cookies = Arc::new(cookie_scope::CookieScope::new(&state.config));
    let redirect_base = base.clone();
    let log_base = base.clone();
    // Innermost first: each `around` wraps everything above it.
    let app = routes
        .around(move |ep, req| middleware::csrf_guard(ep, req, origin.clone()))
        // Inside the session layer, so error pages keep the signed-in header; the outer one renders
        // what the session layer itself fails with.
        .around(error::render_errors)
        .around(move |ep, req| middleware::load_session(ep, req, session_settings.clone()))
        .around(error::render_errors)
        .around(uploads::tus_resumable)
        .around(move |ep, req| middleware::prefix_redirects(ep, req, redirect_base.clone()));
    // Boxing here keeps the endpoint's type shallow enough for the compiler.
    under_base_path(&base, app)
        .around(move |ep, req| middleware::choose_lang(ep, req, lang_cookies.clone()))
        .around(move |ep, req| middleware::security_headers(ep, req, https))
        .with(CookieJarManager::new())
        .around(move |ep, req| middleware::request_metrics(ep, req, request_metrics.clone()))
        // Boxed again for the same reason.
        .boxed()
        .around(move |ep, req| middleware::access_log(ep, req, log_base.clone()))
        .around(move |ep, req| middleware::client_addr(ep, req, trusted.clone()))
        .around(move |ep, req| middleware::collect_after_response(ep, req, access_time_gc.clone()))
        .data(state)
}

/// The app below its base path (`/files/…`), which the router strips, so everything inside sees
/// app-relative paths. A request outside it is answered by the friendly 404 page.
fn under_base_path(base: &BasePath, app: impl Endpoint<Output = poem::Response> + 'static) -> BoxEndpoint<'static> {
    if base.is_root() {
        return app.boxed();
    }
    Route::new().nest(base.as_str(), app).around(error::render_errors).boxed()
}
