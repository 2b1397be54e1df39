//! Maintenance over HTTP: the authenticated trigger for machines (JSON) and the admin pages for
//! people (recent runs, failures first, and the items of one run).

pub mod admin;
pub mod api;

use poem::{Route, get, post};

/// The admin's pages of maintenance runs.
pub fn routes(route: Route) -> Route {
    route.at("/admin/maintenance", get(admin::list_runs)).at("/admin/maintenance/:id", get(admin::show_run))
}

/// The trigger for machines: only with a token configured, otherwise it does not exist (404).
pub fn api_routes(route: Route) -> Route {
    route.at("/maintenance/runs", post(api::trigger)).at("/maintenance/runs/:id", get(api::show))
}
