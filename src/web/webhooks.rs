//! Webhook endpoints on the pages: `/webhooks` lists the signed-in person's endpoints and registers
//! one (an admin may make it hear the whole team), an endpoint's page shows its delivery log with
//! its buttons (test event, rotate secret, on/off, delete), and a new secret is shown once.

use askama::Template;
use poem::{
    IntoResponse, Response, Route, get, handler,
    http::{StatusCode, header},
    post,
    web::{Html, Path, Query},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, Context, SignedIn, form::Form, middleware::SessionHandle, paths, render, render_with,
    see_other,
};
use crate::{
    accounts::User,
    i18n::format::human_time,
    services::webhooks::{EndpointRefusal, Reach},
    webhooks::{
        EventType,
        guard::Refusal,
        outbox::{LogEntry, MessageStatus},
        repo::Endpoint,
        signing::WebhookSecret,
    },
};

pub fn routes(route: Route) -> Route {
    route
        .at(paths::WEBHOOKS, get(list).post(register))
        .at("/webhooks/:id", get(show))
        .at("/webhooks/:id/test", post(send_test))
        .at("/webhooks/:id/rotate", post(rotate))
        .at("/webhooks/:id/enabled", post(set_enabled))
        .at("/webhooks/:id/delete", post(delete))
}

#[derive(Deserialize)]
pub struct DoneQuery {
    /// The change that led here, for its notice.
    done: Option<String>,
}

#[derive(Template)]
#[template(path = "webhooks/list.html")]
struct ListPage {
    c: Chrome,
    csrf_token: String,
    endpoints: Vec<Endpoint>,
    is_admin: bool,
    choosable: [EventType; EventType::CHOOSABLE.len()],
    notice: Option<&'static str>,
    /// A refused form: why, and what was typed and ticked.
    error: Option<&'static str>,
    url: String,
    chosen: Vec<EventType>,
}

#[derive(Template)]
#[template(path = "webhooks/secret.html")]
struct SecretPage {
    c: Chrome,
    endpoint_id: i64,
    secret: WebhookSecret,
}

#[derive(Template)]
#[template(path = "webhooks/endpoint.html")]
struct EndpointPage {
    c: Chrome,
    csrf_token: String,
    endpoint: Endpoint,
    created: String,
    log: Vec<LogRow>,
    notice: Option<&'static str>,
}

/// One message as the log shows it.
struct LogRow {
    event: &'static str,
    status: &'static str,
    /// The stored status, for the page's markup.
    status_code: &'static str,
    attempts: i32,
    last_answer: String,
    next_try: String,
}

impl LogRow {
    fn of(c: &Chrome, entry: LogEntry) -> Self {
        let t = &c.t.webhooks;
        let status = match entry.status {
            MessageStatus::Pending => t.status_pending,
            MessageStatus::Sending => t.status_sending,
            MessageStatus::Delivered => t.status_delivered,
            MessageStatus::Dead => t.status_dead,
            MessageStatus::Dropped => t.status_dropped,
        };
        let last_answer = match (entry.last_status, entry.last_error) {
            (_, Some(error)) => error,
            (Some(status), None) => format!("HTTP {status}"),
            (None, None) => String::new(),
        };
        let next_try = if entry.status == MessageStatus::Pending {
            human_time(entry.next_attempt_at, c.reader())
        } else {
            String::new()
        };
        Self {
            event: entry.event_type.code(),
            status,
            status_code: entry.status.code(),
            attempts: entry.attempts,
            last_answer,
            next_try,
        }
    }
}

async fn list_page(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    user: &User,
    notice: Option<&'static str>,
) -> Result<ListPage, AppError> {
    Ok(ListPage {
        csrf_token: session.form_token(),
        endpoints: state.services.webhooks.endpoints(user).await?,
        is_admin: user.is_admin(),
        choosable: EventType::CHOOSABLE,
        notice,
        error: None,
        url: String::new(),
        chosen: EventType::CHOOSABLE.to_vec(),
        c,
    })
}

/// GET /webhooks
#[handler]
pub async fn list(
    Context { c, state, session, .. }: Context<'_>,
    Query(query): Query<DoneQuery>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let notice = (query.done.as_deref() == Some("deleted")).then_some(c.t.webhooks.deleted_notice);
    render(&list_page(c, state, session, &user, notice).await?)
}

/// POST /webhooks: registers an endpoint, then shows its secret once.
#[handler]
pub async fn register(
    Context { c, state, session, .. }: Context<'_>,
    Form(fields): Form<Vec<(String, String)>>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str());
    let chosen: Vec<EventType> =
        fields.iter().filter(|(k, _)| k == "event").filter_map(|(_, v)| EventType::parse(v).ok()).collect();
    let reach = if field("team") == "on" { Reach::Team } else { Reach::Own };
    let t = &c.t.webhooks;
    let error = match state.services.webhooks.register(&user, field("url"), &chosen, reach).await? {
        Ok(registered) => {
            let page = SecretPage { c, endpoint_id: registered.endpoint_id, secret: registered.secret };
            return shown_once(&page);
        }
        Err(
            EndpointRefusal::NotAUrl | EndpointRefusal::Address(Refusal::Scheme | Refusal::NoHost | Refusal::PortZero),
        ) => t.url_invalid,
        Err(EndpointRefusal::Address(Refusal::Internal(_))) => t.url_internal,
        Err(EndpointRefusal::Address(Refusal::PlainHttp(_))) => t.url_plain_http,
        Err(EndpointRefusal::Address(Refusal::Unresolved | Refusal::LookupTimedOut)) => t.url_unresolved,
        Err(EndpointRefusal::NoEvents) => t.events_none,
        Err(EndpointRefusal::NotAdmin) => t.team_not_admin,
    };
    let mut page = list_page(c, state, session, &user, None).await?;
    page.error = Some(error);
    page.url = field("url").to_owned();
    page.chosen = chosen;
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// A page with a secret: no browser or proxy may keep a copy.
fn shown_once(page: &impl Template) -> Result<Response, AppError> {
    Ok(Html(page.render()?).with_header(header::CACHE_CONTROL, "no-store").into_response())
}

/// GET /webhooks/{id}
#[handler]
pub async fn show(
    Path(id): Path<i64>,
    Context { c, state, session, .. }: Context<'_>,
    Query(query): Query<DoneQuery>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let found = state.services.webhooks.endpoint(&user, id).await?;
    let page = found.ok_or(AppError::NotFound("webhook endpoint"))?;
    let t = &c.t.webhooks;
    let notice = match query.done.as_deref() {
        Some("test") => Some(t.test_queued),
        Some("enabled") => Some(t.enabled_notice),
        Some("disabled") => Some(t.disabled_notice),
        _ => None,
    };
    let created = human_time(page.endpoint.created_at, c.reader());
    let log = page.log.into_iter().map(|entry| LogRow::of(&c, entry)).collect();
    render(&EndpointPage { csrf_token: session.form_token(), endpoint: page.endpoint, created, log, notice, c })
}

/// POST /webhooks/{id}/test
#[handler]
pub async fn send_test(
    Path(id): Path<i64>,
    Context { state, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    if !state.services.webhooks.send_test(&user, id).await? {
        return Err(AppError::NotFound("webhook endpoint"));
    }
    Ok(see_other(&paths::webhook_done(id, "test")))
}

/// POST /webhooks/{id}/rotate: a new secret, shown once; the old one signs for the overlap.
#[handler]
pub async fn rotate(
    Path(id): Path<i64>,
    Context { c, state, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let secret = state.services.webhooks.rotate_secret(&user, id).await?;
    let secret = secret.ok_or(AppError::NotFound("webhook endpoint"))?;
    shown_once(&SecretPage { c, endpoint_id: id, secret })
}

/// POST /webhooks/{id}/enabled: `enabled=on` turns it on, anything else off.
#[handler]
pub async fn set_enabled(
    Path(id): Path<i64>,
    Context { state, .. }: Context<'_>,
    Form(fields): Form<Vec<(String, String)>>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let on = fields.iter().any(|(k, v)| k == "enabled" && v == "on");
    if !state.services.webhooks.set_enabled(&user, id, on).await? {
        return Err(AppError::NotFound("webhook endpoint"));
    }
    Ok(see_other(&paths::webhook_done(id, if on { "enabled" } else { "disabled" })))
}

/// POST /webhooks/{id}/delete
#[handler]
pub async fn delete(
    Path(id): Path<i64>,
    Context { state, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    if !state.services.webhooks.delete(&user, id).await? {
        return Err(AppError::NotFound("webhook endpoint"));
    }
    Ok(see_other(paths::WEBHOOKS_DELETED))
}
