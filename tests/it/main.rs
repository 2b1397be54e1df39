//! Integration tests: the real app over HTTP, on both database backends.

#[allow(dead_code)] // the harness offers more than each area uses
mod support;

mod accounts;
mod auth_log;
mod big_upload;
mod browser_dashboard;
mod browser_mails;
mod browser_recipient;
mod browser_resume;
mod browser_sender_pages;
mod browser_smoke;
mod browser_uploads;
mod cli_output;
mod code_limits;
mod codes;
mod dashboard;
mod data_folder;
mod deletion;
mod downloads;
mod fault_drills;
mod gc_plan;
mod gc_runner;
mod hostile_input;
mod lang_switch;
mod leases;
mod leftovers;
mod lifecycle;
mod maintenance;
mod maintenance_sweeps;
mod outbox;
mod outbox_upgrade;
mod platform;
mod recipient;
mod resumed_downloads;
mod secrets_kept_out;
mod sender_actions;
mod share_access;
mod share_outcomes;
mod share_rows;
mod sign_in_limits;
mod team;
mod transport;
mod unicode_names;
mod uploads;
mod visits;
