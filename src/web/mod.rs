//! The HTTP layer: routes, handlers, template structs, middleware and error pages. It parses
//! requests into domain types and calls the domain; it holds no SQL.

mod account;
pub mod api;
mod arrived;
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
mod invitations;
mod maintenance;
mod metrics;
pub mod middleware;
mod nav;
pub(crate) mod pages;
mod passkeys;
mod paths;
mod recipient;
mod requests;
mod second_factor;
mod sso;
mod team;
mod tokens;
pub(crate) mod uploads;
mod webhooks;

use std::{ops::Deref, sync::Arc};

use poem::{Endpoint, EndpointExt, Route, endpoint::BoxEndpoint, get, middleware::CookieJarManager};

pub use error::AppError;
pub use extract::{Admin, Context, SignedIn};
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
        form_key: state.services.parts().secret_key.derive(crate::secret::Purpose::AnonymousForm),
    };
    let access_time_gc = state.config.settings.access_time_gc.then(|| state.services.gc.clone());
    let request_metrics = state.services.telemetry.metrics().clone();

    let routes = routes(&state.config);

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

/// Every route, area by area; the optional ones only when configured.
fn routes(config: &Config) -> Route {
    let settings = &config.settings;
    let areas: [fn(Route) -> Route; 12] = [
        site_routes,
        auth::routes,
        account::routes,
        team::routes,
        invitations::routes,
        deletion::routes,
        maintenance::routes,
        dashboard::routes,
        requests::routes,
        uploads::routes,
        recipient::routes,
        webhooks::routes,
    ];
    let mut routes = areas.into_iter().fold(Route::new(), |routes, area| area(routes));
    routes = api::routes(routes, config);
    // Only with a token configured: otherwise the trigger does not exist (404).
    if settings.maintenance_token.is_some() {
        routes = maintenance::api_routes(routes);
    }
    // Only without an SMTP relay: the page shows mails that otherwise went to real inboxes.
    if settings.smtp_url.is_none() {
        routes = routes.at("/dev/outbox", get(dev_outbox::show));
    }
    // Only with a token configured: otherwise /metrics is an unknown path (404).
    if settings.metrics_token.is_some() {
        routes = routes.at("/metrics", get(metrics::scrape));
    }
    routes
}

/// The start page, the probes and the static files.
fn site_routes(route: Route) -> Route {
    route
        .at("/", get(pages::home))
        .at("/healthz", get(health::healthz))
        .at("/readyz", get(health::readyz))
        .at("/static/:version/:name", get(assets::serve_asset))
        .at("/favicon.ico", get(assets::favicon))
}

/// The app below its base path (`/files/…`), which the router strips, so everything inside sees
/// app-relative paths. A request outside it is answered by the friendly 404 page.
fn under_base_path(base: &BasePath, app: impl Endpoint<Output = poem::Response> + 'static) -> BoxEndpoint<'static> {
    if base.is_root() {
        return app.boxed();
    }
    Route::new().nest(base.as_str(), app).around(error::render_errors).boxed()
}
