//! The API's webhook endpoints: register one (its `whsec_…` secret answered once), page and read
//! them with their delivery log, delete one, rotate its secret, queue a test event. Every rule is
//! the webhooks service's, as for the pages: team reach only for an admin, the address guard, an
//! endpoint seen and changed only by its owner (another's answers 404 as one that does not exist).

use poem::{http::StatusCode, web::Data};
use poem_openapi::{
    ApiResponse, Enum, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{ApiTags, auth::Token, cursor::Page, fields::invalid, problem::ApiError, requests::Deleted};
use crate::{
    accounts::tokens::Scope,
    db::Timestamp,
    services::webhooks::{EndpointRefusal, ROTATION_OVERLAP, Reach as ServiceReach},
    web::AppState,
    webhooks::{
        EventType,
        outbox::{LogEntry, MessageStatus},
        repo::Endpoint,
        signing::WebhookSecret,
    },
};

pub struct WebhookApi;

/// An answer that carries a secret: no cache or proxy may keep a copy.
const NO_STORE: &str = "no-store";

/// Whose shares an endpoint hears about.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[oai(rename_all = "lowercase")]
pub enum Reach {
    /// The token owner's own shares.
    Own,
    /// Every share of the team (an admin's endpoint).
    Team,
}

impl From<Reach> for ServiceReach {
    fn from(reach: Reach) -> Self {
        match reach {
            Reach::Own => Self::Own,
            Reach::Team => Self::Team,
        }
    }
}

/// A new endpoint.
#[derive(Object)]
pub struct NewWebhook {
    /// Where the signed messages go: `https://…` (plain `http://` only inside the networks the
    /// operator allows); never a private, loopback or link-local address.
    pub url: String,
    /// The events it hears (`share.created`, `share.opened`, `share.verified`,
    /// `share.downloaded`, `share.expired`, `share.ended`, `share.locked`, `request.answered`,
    /// `file.refused`); at least one.
    pub event_types: Vec<String>,
    /// `team` (an admin only) hears every share of the team; `own` without it.
    pub reach: Option<Reach>,
}

/// A message to an endpoint, as its delivery log shows it (never its body).
#[derive(Object)]
pub struct Delivery {
    /// Its `webhook-id`, the same on every attempt.
    pub message_id: String,
    pub event_type: String,
    /// `pending`, `sending`, `delivered`, `dead` (given up) or `dropped` (never sent).
    pub status: String,
    /// Failed attempts so far.
    pub attempts: i32,
    /// The receiver's last HTTP status.
    #[oai(skip_serializing_if_is_none)]
    pub last_status: Option<i32>,
    /// Why the last attempt failed.
    #[oai(skip_serializing_if_is_none)]
    pub last_error: Option<String>,
    pub created_at: String,
    /// When a pending message is tried next.
    #[oai(skip_serializing_if_is_none)]
    pub next_attempt_at: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub delivered_at: Option<String>,
}

fn rfc3339(at: Timestamp) -> String {
    at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl From<LogEntry> for Delivery {
    fn from(entry: LogEntry) -> Self {
        let pending = entry.status == MessageStatus::Pending;
        Self {
            message_id: entry.message_id,
            event_type: entry.event_type.code().to_owned(),
            status: entry.status.code().to_owned(),
            attempts: entry.attempts,
            last_status: entry.last_status,
            last_error: entry.last_error,
            created_at: rfc3339(entry.created_at),
            next_attempt_at: pending.then(|| rfc3339(entry.next_attempt_at)),
            delivered_at: entry.delivered_at.map(rfc3339),
        }
    }
}

/// An endpoint (never its secret).
#[derive(Object)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub event_types: Vec<String>,
    pub reach: Reach,
    /// Off: nothing is sent to it (turned off on its page).
    pub enabled: bool,
    pub created_at: String,
    /// Its latest message; absent before the first.
    #[oai(skip_serializing_if_is_none)]
    pub last_delivery: Option<Delivery>,
}

impl Webhook {
    fn of(endpoint: Endpoint, latest: Option<LogEntry>) -> Self {
        Self {
            id: endpoint.id,
            event_types: endpoint.event_types().iter().map(|t| t.code().to_owned()).collect(),
            url: endpoint.url,
            reach: if endpoint.team { Reach::Team } else { Reach::Own },
            enabled: endpoint.enabled,
            created_at: rfc3339(endpoint.created_at),
            last_delivery: latest.map(Delivery::from),
        }
    }
}

/// A page of endpoints.
#[derive(Object)]
pub struct WebhookPage {
    pub webhooks: Vec<Webhook>,
    /// The next page's `cursor`; absent on the last page.
    #[oai(skip_serializing_if_is_none)]
    pub next_cursor: Option<String>,
}

/// An endpoint with its latest messages, newest first.
#[derive(Object)]
pub struct WebhookDetail {
    #[oai(flatten)]
    pub webhook: Webhook,
    pub deliveries: Vec<Delivery>,
}

/// An endpoint just registered, with its signing secret: shown only in this answer.
#[derive(Object)]
pub struct CreatedWebhook {
    #[oai(flatten)]
    pub webhook: Webhook,
    /// The Standard Webhooks secret, `whsec_<base64>`.
    pub secret: String,
}

/// 201 with the endpoint and its secret.
#[derive(ApiResponse)]
pub enum Registered {
    #[oai(status = 201)]
    Created(Json<CreatedWebhook>, #[oai(header = "Cache-Control")] String),
}

/// A new secret: shown only in this answer.
#[derive(Object)]
pub struct RotatedSecret {
    pub id: i64,
    /// The new `whsec_…` secret; messages are signed with it from now on.
    pub secret: String,
    /// How long the previous secret still signs beside it (each message then carries both
    /// signatures), so that receivers can switch without losing any.
    pub previous_signs_for_seconds: u64,
}

/// The new secret.
#[derive(ApiResponse)]
pub enum Rotated {
    #[oai(status = 200)]
    Ok(Json<RotatedSecret>, #[oai(header = "Cache-Control")] String),
}

/// A test event queued.
#[derive(Object)]
pub struct TestQueued {
    pub id: i64,
}

/// 202: the test event goes out with the next delivery pass.
#[derive(ApiResponse)]
pub enum Queued {
    #[oai(status = 202)]
    Accepted(Json<TestQueued>),
}

/// The event types as typed: each must be one an endpoint may choose.
fn event_types(codes: &[String]) -> Result<Vec<EventType>, ApiError> {
    codes
        .iter()
        .map(|code| {
            EventType::parse(code)
                .ok()
                .filter(|t| EventType::CHOOSABLE.contains(t))
                .ok_or_else(|| invalid("event_types", format!("no event {code:?}")))
        })
        .collect()
}

/// The service's refusal as the API answers it: the same reason the page gives.
fn refused(refusal: EndpointRefusal) -> ApiError {
    match refusal {
        EndpointRefusal::NotAdmin => ApiError::of(StatusCode::FORBIDDEN, refusal.to_string()),
        EndpointRefusal::NoEvents => invalid("event_types", refusal),
        EndpointRefusal::NotAUrl | EndpointRefusal::Address(_) => invalid("url", refusal),
    }
}

fn shown_once(secret: &WebhookSecret) -> String {
    secret.expose().to_owned()
}

#[OpenApi(tag = "ApiTags::Webhooks")]
impl WebhookApi {
    /// Registers an endpoint: it hears the chosen events of the token owner's shares, or of the
    /// whole team (an admin's, `reach: team`). The answer holds its signing secret, shown only
    /// here.
    ///
    /// Needs the scope `webhooks:write`.
    #[oai(path = "/webhooks", method = "post")]
    async fn create(
        &self,
        state: Data<&AppState>,
        token: Token,
        body: Json<NewWebhook>,
    ) -> Result<Registered, ApiError> {
        let caller = token.with(Scope::WebhooksWrite)?;
        let body = body.0;
        let types = event_types(&body.event_types)?;
        let reach = body.reach.unwrap_or(Reach::Own).into();
        let webhooks = &state.services.webhooks;
        let registered = webhooks.register(&caller.user, &body.url, &types, reach).await?.map_err(refused)?;
        let page = webhooks.endpoint(&caller.user, registered.endpoint_id).await?;
        let page = page.ok_or_else(ApiError::not_found)?;
        let webhook = Webhook::of(page.endpoint, None);
        let created = CreatedWebhook { webhook, secret: shown_once(&registered.secret) };
        Ok(Registered::Created(Json(created), NO_STORE.to_owned()))
    }

    /// The token owner's endpoints, newest first, a page at a time, each with its latest
    /// message: pass `next_cursor` as `cursor` for the next.
    ///
    /// Needs the scope `webhooks:read`.
    #[oai(path = "/webhooks", method = "get")]
    async fn list(
        &self,
        state: Data<&AppState>,
        token: Token,
        /// Where the previous page ended (its `next_cursor`).
        cursor: Query<Option<String>>,
        /// How many endpoints at most (1 to 100; 25 without it).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<Json<WebhookPage>, ApiError> {
        let caller = token.with(Scope::WebhooksRead)?;
        let page = Page::of(cursor.0.as_deref(), limit.0)?;
        let endpoints = state.services.webhooks.endpoints_page(&caller.user, page.before, page.ask()).await?;
        let (endpoints, next_cursor) = page.cut(endpoints, |(endpoint, _)| endpoint.id);
        let webhooks = endpoints.into_iter().map(|(endpoint, latest)| Webhook::of(endpoint, latest)).collect();
        Ok(Json(WebhookPage { webhooks, next_cursor }))
    }

    /// An endpoint with its delivery log: its latest messages, their status, failed attempts and
    /// the last error.
    ///
    /// Needs the scope `webhooks:read`.
    #[oai(path = "/webhooks/:id", method = "get")]
    async fn show(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Json<WebhookDetail>, ApiError> {
        let caller = token.with(Scope::WebhooksRead)?;
        let page = state.services.webhooks.endpoint(&caller.user, id.0).await?;
        let page = page.ok_or_else(ApiError::not_found)?;
        let webhook = Webhook::of(page.endpoint, page.log.first().cloned());
        let deliveries = page.log.into_iter().map(Delivery::from).collect();
        Ok(Json(WebhookDetail { webhook, deliveries }))
    }

    /// Deletes an endpoint and its messages: nothing more is sent to it.
    ///
    /// Needs the scope `webhooks:write`.
    #[oai(path = "/webhooks/:id", method = "delete")]
    async fn delete(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Json<Deleted>, ApiError> {
        let caller = token.with(Scope::WebhooksWrite)?;
        if !state.services.webhooks.delete(&caller.user, id.0).await? {
            return Err(ApiError::not_found());
        }
        Ok(Json(Deleted { id: id.0 }))
    }

    /// A new signing secret, shown only in this answer; the previous one keeps signing beside it
    /// for `previous_signs_for_seconds`.
    ///
    /// Needs the scope `webhooks:write`.
    #[oai(path = "/webhooks/:id/rotate", method = "post")]
    async fn rotate(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Rotated, ApiError> {
        let caller = token.with(Scope::WebhooksWrite)?;
        let secret = state.services.webhooks.rotate_secret(&caller.user, id.0).await?;
        let secret = secret.ok_or_else(ApiError::not_found)?;
        let rotated = RotatedSecret {
            id: id.0,
            secret: shown_once(&secret),
            previous_signs_for_seconds: ROTATION_OVERLAP.as_secs(),
        };
        Ok(Rotated::Ok(Json(rotated), NO_STORE.to_owned()))
    }

    /// Queues a `webhook.test` message to the endpoint, signed and delivered as any other.
    ///
    /// Needs the scope `webhooks:write`.
    #[oai(path = "/webhooks/:id/test", method = "post")]
    async fn send_test(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Queued, ApiError> {
        let caller = token.with(Scope::WebhooksWrite)?;
        if !state.services.webhooks.send_test(&caller.user, id.0).await? {
            return Err(ApiError::not_found());
        }
        Ok(Queued::Accepted(Json(TestQueued { id: id.0 })))
    }
}
