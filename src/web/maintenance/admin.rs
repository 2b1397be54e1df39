//! The admin's view of the maintenance ledger: the latest runs with failures first, and one run
//! with its per-kind counts and its items (ids and outcomes only), a page at a time.

use askama::Template;
use poem::{
    handler,
    web::{Data, Html, Path, Query},
};
use serde::Deserialize;

use crate::{
    i18n::format::human_time,
    maintenance::{Run, RunItem, TargetCount},
    web::{Admin, AppError, AppState, Chrome, render},
};

/// Runs listed on the page.
const RECENT_RUNS: i64 = 100;
/// Items shown per page of one run.
const ITEMS_PER_PAGE: i64 = 200;

/// A run as a table row: times already formatted for the reader's language.
struct RunRow {
    run: Run,
    accepted: String,
}

#[derive(Template)]
#[template(path = "admin/maintenance.html")]
struct RunsPage {
    c: Chrome,
    rows: Vec<RunRow>,
}

/// GET /admin/maintenance
#[handler]
pub async fn list_runs(c: Chrome, state: Data<&AppState>, _admin: Admin) -> Result<Html<String>, AppError> {
    let rows = state
        .services
        .records
        .recent_runs(RECENT_RUNS)
        .await?
        .into_iter()
        .map(|run| RunRow { accepted: human_time(run.accepted_at, c.reader()), run })
        .collect();
    render(&RunsPage { c, rows })
}

#[derive(Template)]
#[template(path = "admin/maintenance_run.html")]
struct RunPage {
    c: Chrome,
    row: RunRow,
    finished: Option<String>,
    summary: Vec<TargetCount>,
    items: Vec<RunItem>,
    next_after: Option<i64>,
}

#[derive(Deserialize)]
pub struct ItemsQuery {
    after: Option<i64>,
}

/// GET /admin/maintenance/{id}[?after=ITEM]
#[handler]
pub async fn show_run(
    c: Chrome,
    state: Data<&AppState>,
    Path(id): Path<String>,
    Query(query): Query<ItemsQuery>,
    _admin: Admin,
) -> Result<Html<String>, AppError> {
    let id = id.parse::<i64>().map_err(|_| AppError::NotFound("maintenance run id"))?;
    let records = &state.services.records;
    let run = records.run(id).await?.ok_or(AppError::NotFound("maintenance run"))?;
    let items = records.run_items(id, query.after.unwrap_or(0), ITEMS_PER_PAGE).await?;
    let next_after = (items.len() as i64 == ITEMS_PER_PAGE).then(|| items.last().map(|i| i.id)).flatten();
    let page = RunPage {
        finished: run.finished_at.map(|at| human_time(at, c.reader())),
        row: RunRow { accepted: human_time(run.accepted_at, c.reader()), run },
        summary: records.run_summary(id).await?,
        items,
        next_after,
        c,
    };
    render(&page)
}
