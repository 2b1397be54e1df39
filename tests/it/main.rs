//! Integration tests: the real app over HTTP, on both database backends.

#[allow(dead_code)] // the harness offers more than each area uses
mod support;

mod accounts;
mod big_upload;
mod browser_dashboard;
mod browser_recipient;
mod browser_smoke;
mod codes;
mod dashboard;
mod data_folder;
mod deletion;
mod downloads;
mod fault_drills;
mod hostile_input;
mod lang_switch;
mod lifecycle;
mod maintenance;
mod outbox;
mod outbox_upgrade;
mod platform;
mod recipient;
mod share_access;
mod team;
mod transport;
mod unicode_names;
