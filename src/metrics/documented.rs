//! The series table of docs/operations/metrics.md against the series names here: a series added,
//! renamed or removed without its line (or a line left for one that is gone) fails here.

use std::collections::BTreeSet;

/// The names of the `const NAME: &str = "watasu_…";` lines of metrics.rs.
fn defined() -> BTreeSet<String> {
    include_str!("../metrics.rs")
        .lines()
        .filter(|line| line.starts_with("const ") && line.contains(": &str = \"watasu_"))
        .filter_map(|line| line.split('"').nth(1))
        .map(str::to_owned)
        .collect()
}

/// The names of the table rows, `| `watasu_name{labels}` | type | meaning |`.
fn documented() -> BTreeSet<String> {
    include_str!("../../docs/operations/metrics.md")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter(|rest| rest.starts_with("watasu_"))
        .filter_map(|rest| rest.split(['{', '`']).next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_metrics_page_names_every_series_and_no_other() {
    let (defined, documented) = (defined(), documented());
    assert!(defined.len() > 15, "the series were not found: {defined:?}");
    let missing: Vec<_> = defined.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&defined).collect();
    assert!(missing.is_empty(), "series without a line in docs/operations/metrics.md: {missing:?}");
    assert!(stale.is_empty(), "lines in docs/operations/metrics.md for no series: {stale:?}");
}
