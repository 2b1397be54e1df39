//! Deletion cases on the web: the sender's "delete my account and data" (password asked again),
//! an admin opening a case for a team member, and the admin pages with every case, its per-store
//! results and evidence, and the needs-review list. The case runs in the background: it does not
//! depend on this request, nor on the session it ends.

use askama::Template;
use poem::{
    Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Html, Path},
};
use serde::Deserialize;

use super::{Admin, AppError, AppState, Chrome, Context, SignedIn, form::Form, paths, render, render_with, see_other};
use crate::{
    deletion::{ActorRole, Case, EvidenceRow, NeedsReview, OpenError, OpenRequest, StepRow},
    i18n::{Lang, format::human_time},
    secret::SecretString,
    services::accounts::AccountError,
};

/// The admin's deletion cases (a sender's own case is opened from the account page, another
/// member's from the team page).
pub fn routes(route: Route) -> Route {
    route
        .at("/admin/deletions", get(list))
        .at("/admin/deletions/:reference", get(show))
        .at("/admin/deletions/:reference/retry", post(retry))
}

#[derive(Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    password: String,
}

#[derive(Template)]
#[template(path = "auth/deletion_requested.html")]
struct RequestedPage<'a> {
    c: Chrome,
    reference: &'a str,
}

/// POST /account/delete: the sender's own case, after their password is entered again. A wrong
/// password (or a refusal) shows the account page with the reason and changes nothing.
#[handler]
pub async fn delete_own(
    Context { c, state, session, client, req }: Context<'_>,
    Form(form): Form<DeleteForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let t = c.t;
    let password = SecretString::new(form.password);
    let right = match state.services.accounts.confirm_password(&user, password, client).await {
        Ok(right) => right,
        Err(AccountError::TooMany(retry_after)) => {
            return Err(AppError::TooMany { reason: "deletion password attempts", retry_after });
        }
        Err(error) => return Err(super::auth::account_error(error)),
    };
    if !right {
        tracing::info!(account_id = user.id, client = %client, "deletion refused: wrong password");
        return super::account::account_with_deletion_error(c, session, &user, t.auth.password_current_wrong);
    }
    let request = OpenRequest { subject_id: user.id, actor_id: Some(user.id), role: ActorRole::Own, reapplies: None };
    let case = match state.services.deletion.open(&request).await {
        Ok(case) => case,
        Err(refused) => {
            let message = refusal_text(t, refused)?;
            return super::account::account_with_deletion_error(c, session, &user, message);
        }
    };
    session.end().await?;
    state.services.deletion.spawn(case.id);
    // Built after the sign-out, so the header no longer shows the dashboard.
    let page = RequestedPage { c: Chrome::for_request(req), reference: &case.reference };
    render_with(StatusCode::OK, &page)
}

/// The words for a refused case; a database failure stays an error.
fn refusal_text(t: &'static crate::i18n::Text, error: OpenError) -> Result<&'static str, AppError> {
    match error {
        OpenError::LastAdmin => Ok(t.admin.deletion.last_admin),
        OpenError::AlreadyOpen => Ok(t.admin.deletion.already_open),
        OpenError::NoSuchAccount => Err(AppError::NotFound("no such account")),
        OpenError::Database(error) => Err(crate::services::Fault::from(error).into()),
    }
}

/// POST /team/{id}/delete: an admin opens a case for another account (their own goes through
/// /account, with their password).
#[handler]
pub async fn delete_member(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    Admin(admin): Admin,
) -> Result<Response, AppError> {
    if id == admin.id {
        return Err(AppError::BadRequest("an admin deletes their own account on /account"));
    }
    let request = OpenRequest { subject_id: id, actor_id: Some(admin.id), role: ActorRole::Admin, reapplies: None };
    match state.services.deletion.open(&request).await {
        Ok(case) => {
            state.services.deletion.spawn(case.id);
            Ok(see_other(&paths::deletion_case(&case.reference)))
        }
        Err(refused) => {
            let message = refusal_text(c.t, refused)?;
            super::team::page_with_error(c, state, session, &admin, message).await
        }
    }
}

/// A case as a row of the list.
struct CaseRow {
    reference: String,
    state: &'static str,
    state_code: &'static str,
    opened_by: &'static str,
    opened: String,
    updated: String,
}

fn case_row(c: &Chrome, case: &Case) -> CaseRow {
    let d = &c.t.admin.deletion;
    CaseRow {
        reference: case.reference.clone(),
        state: d.state(case.state()),
        state_code: case.state().code(),
        opened_by: d.role(case.actor_role),
        opened: human_time(case.created_at, c.reader()),
        updated: human_time(case.updated_at, c.reader()),
    }
}

#[derive(Template)]
#[template(path = "admin/deletions.html")]
struct CasesPage {
    c: Chrome,
    cases: Vec<CaseRow>,
    review: Vec<(NeedsReview, &'static str, String)>,
}

/// GET /admin/deletions: every case (newest first) and the steps that wait for an admin.
#[handler]
pub async fn list(c: Chrome, state: Data<&AppState>, _admin: Admin) -> Result<Html<String>, AppError> {
    let records = &state.services.records;
    let rows = records.cases(200).await?.iter().map(|case| case_row(&c, case)).collect();
    let review = records
        .steps_needing_review()
        .await?
        .into_iter()
        .map(|r| {
            let store = c.t.admin.deletion.store(r.store);
            let at = human_time(r.updated_at, c.reader());
            (r, store, at)
        })
        .collect();
    render(&CasesPage { c, cases: rows, review })
}

/// A step as the case page shows it.
struct StepLine {
    store_code: &'static str,
    store: &'static str,
    action: &'static str,
    outcome_code: &'static str,
    outcome: &'static str,
    reason: String,
    found: String,
    remaining: String,
    attempts: i32,
    verified: String,
}

fn step_line(c: &Chrome, s: &StepRow) -> StepLine {
    let d = &c.t.admin.deletion;
    let number = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
    StepLine {
        store_code: s.store.code(),
        store: d.store(s.store),
        action: d.action(s.action),
        outcome_code: s.outcome().code(),
        outcome: d.outcome(s.outcome()),
        reason: s.reason.as_deref().map(|r| d.records.reason(r)).unwrap_or_default().to_owned(),
        found: number(s.found),
        remaining: number(s.remaining),
        attempts: s.attempts,
        verified: s.verified_at.map(|t| human_time(t, c.reader())).unwrap_or_default(),
    }
}

#[derive(Template)]
#[template(path = "admin/deletion.html")]
struct CasePage<'a> {
    c: Chrome,
    csrf_token: &'a str,
    case: CaseRow,
    steps: Vec<StepLine>,
    evidence: Vec<(EvidenceRow, &'static str, &'static str, String)>,
    /// How many evidence rows each store and outcome has, in the order they first appear: what
    /// the page opens with, the full list folded below it.
    evidence_counts: Vec<(&'static str, &'static str, usize)>,
    /// The stores named per outcome: with the case's state, what the page opens with.
    steps_by_outcome: Vec<(&'static str, String)>,
    /// The folds' words, with the number of rows: steps, then evidence.
    show_all: (String, String),
    can_retry: bool,
}

/// The steps' stores grouped by outcome, in the order each outcome first appears.
fn group_steps(steps: &[StepLine], separator: &str) -> Vec<(&'static str, String)> {
    let mut groups: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for step in steps {
        match groups.iter_mut().find(|(outcome, _)| *outcome == step.outcome) {
            Some((_, stores)) => stores.push(step.store),
            None => groups.push((step.outcome, vec![step.store])),
        }
    }
    groups.into_iter().map(|(outcome, stores)| (outcome, stores.join(separator))).collect()
}

/// The evidence rows counted per (store, outcome), in the order each pair first appears.
fn count_evidence(
    evidence: &[(EvidenceRow, &'static str, &'static str, String)],
) -> Vec<(&'static str, &'static str, usize)> {
    let mut counts: Vec<(&'static str, &'static str, usize)> = Vec::new();
    for (_, store, outcome, _) in evidence {
        match counts.iter_mut().find(|(s, o, _)| s == store && o == outcome) {
            Some((_, _, n)) => *n += 1,
            None => counts.push((store, outcome, 1)),
        }
    }
    counts
}

async fn find_case(state: &AppState, reference: &str) -> Result<Case, AppError> {
    state.services.records.case(reference).await?.ok_or(AppError::NotFound("no such deletion case"))
}

/// GET /admin/deletions/{reference}: the case's state, each store's result and the evidence.
#[handler]
pub async fn show(
    Context { c, state, session, .. }: Context<'_>,
    Path(reference): Path<String>,
    _admin: Admin,
) -> Result<Html<String>, AppError> {
    let case = find_case(state, &reference).await?;
    let records = &state.services.records;
    let steps: Vec<StepLine> = records.steps(case.id).await?.iter().map(|s| step_line(&c, s)).collect();
    let d = &c.t.admin.deletion;
    let evidence: Vec<_> = records
        .evidence(case.id)
        .await?
        .into_iter()
        .map(|e| {
            let (store, outcome) = (d.store(e.store), d.outcome(e.outcome));
            let at = human_time(e.finished_at, c.reader());
            (e, store, outcome, at)
        })
        .collect();
    let csrf_token = session.form_token();
    let can_retry = steps.iter().any(|s| s.outcome_code == "needs_review");
    let case = case_row(&c, &case);
    let evidence_counts = count_evidence(&evidence);
    let steps_by_outcome = group_steps(&steps, if c.lang == Lang::Ja { "、" } else { ", " });
    let show_all = (
        d.steps_show_all.replace("{n}", &steps.len().to_string()),
        d.evidence_show_all.replace("{n}", &evidence.len().to_string()),
    );
    let page = CasePage {
        c,
        csrf_token: &csrf_token,
        case,
        steps,
        evidence,
        evidence_counts,
        steps_by_outcome,
        show_all,
        can_retry,
    };
    render(&page)
}

/// POST /admin/deletions/{reference}/retry: the stuck steps get a fresh set of retries, now.
#[handler]
pub async fn retry(
    Path(reference): Path<String>,
    state: Data<&AppState>,
    Admin(admin): Admin,
) -> Result<Response, AppError> {
    let case = find_case(&state, &reference).await?;
    let reset = state.services.records.retry_parked_steps(case.id).await?;
    tracing::info!(account_id = admin.id, case = %case.reference, steps = reset, "deletion steps sent back for retry");
    state.services.deletion.spawn(case.id);
    Ok(see_other(&paths::deletion_case(&case.reference)))
}
