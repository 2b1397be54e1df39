//! The settings table of docs/configuration.md against the settings themselves: a setting added, renamed or
//! removed without its line (or a line left for one that is gone) fails here.

use std::collections::BTreeSet;

use clap::{Args, Command};

use super::Settings;

/// The `(flag, variable)` pairs of the settings table of docs/configuration.md, one per `| `--flag` | `VAR` |` row.
fn readme_settings() -> BTreeSet<(String, String)> {
    let cell = |text: &str| text.trim().trim_matches('`').to_owned();
    include_str!("../../docs/configuration.md")
        .lines()
        .filter(|line| line.starts_with("| `--"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            (cell(cells[1]), cell(cells[2]))
        })
        .collect()
}

/// The `(flag, variable)` pairs clap knows for every setting that reads a `WATASU_*` variable.
fn clap_settings() -> BTreeSet<(String, String)> {
    Settings::augment_args(Command::new("watasu"))
        .get_arguments()
        .filter_map(|arg| {
            let env = arg.get_env()?.to_str()?.to_owned();
            Some((format!("--{}", arg.get_long()?), env))
        })
        .filter(|(_, env)| env.starts_with("WATASU_"))
        .collect()
}

#[test]
fn the_readmes_settings_table_names_every_setting_and_no_other() {
    let (readme, clap) = (readme_settings(), clap_settings());
    assert!(clap.len() > 30, "the settings were not found: {clap:?}");
    let missing: Vec<_> = clap.difference(&readme).collect();
    let stale: Vec<_> = readme.difference(&clap).collect();
    assert!(missing.is_empty(), "settings without a line in docs/configuration.md: {missing:?}");
    assert!(stale.is_empty(), "lines in docs/configuration.md for no setting: {stale:?}");
}
