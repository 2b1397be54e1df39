//! Maintenance over HTTP: the authenticated trigger for machines (JSON) and the admin pages for
//! people (recent runs, failures first, and the items of one run).

pub mod admin;
pub mod api;
