//! The webhook endpoints (their secrets sealed with the row id), and what the dispatcher reads:
//! its cursors, the timeline events and new shares after them, and a handover's files. The
//! messages are in [`super::outbox`].

use crate::{
    db::{Db, Dialect, Sql, Timestamp, one_written_row},
    on_db,
    row_seal::RowSeal,
    secret::SecretKey,
    share::EventKind,
    sql,
};

use super::{EventType, payload::FileFacts, signing::WebhookSecret};

/// What an [`Endpoint`] reads, for the statements that pick endpoints.
macro_rules! endpoint_columns {
    () => {
        "SELECT w.id, w.owner_id, w.team, w.url, w.event_types, w.enabled,
                w.after_event_id, w.after_share_id, w.created_at FROM webhook_endpoints w"
    };
}

const INSERT_ENDPOINT: Sql = Sql::same(
    "INSERT INTO webhook_endpoints (owner_id, team, url, event_types, secret, after_event_id, after_share_id)
     VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(id), 0) FROM share_events), (SELECT coalesce(max(id), 0) FROM shares))
     RETURNING id",
);
const SET_SECRET: Sql = Sql::same("UPDATE webhook_endpoints SET secret = $2 WHERE id = $1");
const OF_OWNER: &str = concat!(endpoint_columns!(), " WHERE w.owner_id = $1 ORDER BY w.id");
const ONE: &str = concat!(endpoint_columns!(), " WHERE w.id = $1 AND w.owner_id = $2");
/// Endpoints that hear of new messages: enabled, of someone not barred, and a team endpoint only
/// while its owner is an admin.
const LISTENING: &str = concat!(
    endpoint_columns!(),
    " JOIN users u ON u.id = w.owner_id WHERE w.enabled = TRUE AND (w.team = FALSE OR u.role = 'admin') AND NOT ",
    barred!()
);
const DELETE: &str = "DELETE FROM webhook_endpoints WHERE id = $1 AND owner_id = $2";
const SET_ENABLED: &str = "UPDATE webhook_endpoints SET enabled = $3 WHERE id = $1 AND owner_id = $2";
/// The current secret becomes the previous one, which still signs for the overlap.
const ROTATE: Sql = sql!(
    "UPDATE webhook_endpoints SET previous_secret = secret, previous_until = " now " + " secs("$3") ", secret = $4
      WHERE id = $1 AND owner_id = $2"
);
const SIGNING: Sql = sql!(
    "SELECT url, secret, previous_secret, COALESCE(previous_until > " now ", FALSE) AS previous_live
       FROM webhook_endpoints WHERE id = $1"
);

const EVENT_CANDIDATES: &str = concat!(
    "SELECT e.id AS source_id, e.kind AS event_kind, e.at, e.file_position, s.id AS share_id, s.handover_id,
            s.sender_id, s.recipient_email AS recipient, s.kind AS share_kind, ",
    barred!(),
    " AS barred
       FROM share_events e JOIN shares s ON s.id = e.share_id JOIN users u ON u.id = s.sender_id
      WHERE e.id > $1 ORDER BY e.id LIMIT $2"
);
const SHARE_CANDIDATES: &str = concat!(
    "SELECT s.id AS source_id, CAST(NULL AS TEXT) AS event_kind, s.created_at AS at,
            CAST(NULL AS INTEGER) AS file_position, s.id AS share_id, s.handover_id,
            s.sender_id, s.recipient_email AS recipient, s.kind AS share_kind, ",
    barred!(),
    " AS barred
       FROM shares s JOIN users u ON u.id = s.sender_id
      WHERE s.id > $1 ORDER BY s.id LIMIT $2"
);
const FILES: &str = "SELECT original_name AS name, size_bytes AS size, sha256, position
                       FROM files WHERE handover_id = $1 ORDER BY position";
const CURSOR: &str = "SELECT last_id FROM webhook_cursors WHERE name = $1";
/// Only forward: an instance that read less than another never moves the cursor back.
const ADVANCE: &str = "UPDATE webhook_cursors SET last_id = $2 WHERE name = $1 AND last_id < $2";
/// A registered endpoint (never its secret).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Endpoint {
    pub id: i64,
    pub owner_id: i64,
    /// Hears about every share of the team (an admin's endpoint), not only its owner's.
    pub team: bool,
    pub url: String,
    event_types: String,
    pub enabled: bool,
    after_event_id: i64,
    after_share_id: i64,
    pub created_at: Timestamp,
}

impl Endpoint {
    pub fn event_types(&self) -> Vec<EventType> {
        EventType::split(&self.event_types)
    }

    /// Whether a fact of `sender_id`'s share, from `source` ([`Source`]) at `source_id`, is news to
    /// this endpoint: one of its events, about a share it hears of, and after it was registered.
    pub fn hears(&self, event: EventType, sender_id: i64, source: Source, source_id: i64) -> bool {
        source_id > self.after(source)
            && (self.team || self.owner_id == sender_id)
            && self.event_types.split(' ').any(|c| c == event.code())
    }

    /// The last id of `source` that was there before this endpoint, and so is not news to it.
    pub fn after(&self, source: Source) -> i64 {
        match source {
            Source::Events => self.after_event_id,
            Source::Shares => self.after_share_id,
        }
    }
}

/// What the dispatcher follows by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The share timeline (`share_events`).
    Events,
    /// New shares (`shares`), for `share.created`.
    Shares,
}

impl Source {
    /// The cursor's name, and the prefix of a message's source key.
    pub fn name(self) -> &'static str {
        match self {
            Self::Events => "share_events",
            Self::Shares => "shares",
        }
    }
}

/// A timeline event or a new share the dispatcher reads.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Candidate {
    pub source_id: i64,
    /// The timeline event; `None` for a new share.
    pub event_kind: Option<EventKind>,
    pub at: Timestamp,
    pub file_position: Option<i32>,
    pub share_id: i64,
    pub handover_id: i64,
    pub sender_id: i64,
    pub recipient: String,
    pub share_kind: String,
    /// The sender is disabled or being deleted: nothing is made for this.
    pub barred: bool,
}

/// Where and how to sign one endpoint's messages now.
#[derive(Clone, Debug)]
pub struct Signing {
    pub url: String,
    /// The current secret first, then the previous one during a rotation's overlap.
    pub secrets: Vec<WebhookSecret>,
}

#[derive(sqlx::FromRow)]
struct SigningRow {
    url: String,
    secret: Vec<u8>,
    previous_secret: Option<Vec<u8>>,
    previous_live: bool,
}

#[derive(Clone, Debug)]
pub struct WebhookRepo {
    db: Db,
    seal: RowSeal,
}

impl WebhookRepo {
    pub fn new(db: Db, secret: &SecretKey) -> Self {
        Self { db, seal: RowSeal::derive(secret, crate::secret::Purpose::WebhookSecret) }
    }

    /// Stores a new endpoint with its secret sealed; answers its id.
    pub async fn insert(
        &self,
        owner_id: i64,
        team: bool,
        url: &str,
        types: &[EventType],
        secret: &WebhookSecret,
    ) -> Result<i64, sqlx::Error> {
        let types = EventType::join(types);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let ids = sqlx::query_scalar(pool.sql(&INSERT_ENDPOINT))
                .bind(owner_id)
                .bind(team)
                .bind(url)
                .bind(&types)
                .bind(Vec::<u8>::new())
                .fetch_all(&mut *tx)
                .await?;
            let id: i64 = one_written_row(ids)?;
            let sealed = self.seal.seal(id, secret.expose().as_bytes());
            sqlx::query(pool.sql(&SET_SECRET)).bind(id).bind(sealed).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(id)
        })
    }

    pub async fn of_owner(&self, owner_id: i64) -> Result<Vec<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(OF_OWNER).bind(owner_id).fetch_all(pool).await)
    }

    pub async fn one(&self, id: i64, owner_id: i64) -> Result<Option<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(ONE).bind(id).bind(owner_id).fetch_optional(pool).await)
    }

    pub async fn listening(&self) -> Result<Vec<Endpoint>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(LISTENING).fetch_all(pool).await)
    }

    /// True when the owner's endpoint was there and is gone (its messages with it).
    pub async fn delete(&self, id: i64, owner_id: i64) -> Result<bool, sqlx::Error> {
        let done =
            on_db!(&self.db, |pool| sqlx::query(DELETE).bind(id).bind(owner_id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    pub async fn set_enabled(&self, id: i64, owner_id: i64, enabled: bool) -> Result<bool, sqlx::Error> {
        let done = on_db!(&self.db, |pool| {
            sqlx::query(SET_ENABLED).bind(id).bind(owner_id).bind(enabled).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Makes `secret` the endpoint's secret; the one before still signs for `overlap`.
    pub async fn rotate(
        &self,
        id: i64,
        owner_id: i64,
        secret: &WebhookSecret,
        overlap: std::time::Duration,
    ) -> Result<bool, sqlx::Error> {
        let sealed = self.seal.seal(id, secret.expose().as_bytes());
        let overlap = crate::db::seconds(overlap);
        let done = on_db!(&self.db, |pool| {
            let query = sqlx::query(pool.sql(&ROTATE)).bind(id).bind(owner_id).bind(overlap).bind(sealed);
            query.execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// The endpoint's address and the secrets that sign now; `None` when the endpoint is gone or
    /// its secret does not open (the instance's secret key changed).
    pub async fn signing(&self, endpoint_id: i64) -> Result<Option<Signing>, sqlx::Error> {
        let row: Option<SigningRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&SIGNING)).bind(endpoint_id).fetch_optional(pool).await?
        });
        let Some(row) = row else { return Ok(None) };
        let open = |sealed: &[u8]| {
            let plain = self.seal.open(endpoint_id, sealed)?;
            WebhookSecret::parse(std::str::from_utf8(&plain).ok()?)
        };
        let Some(current) = open(&row.secret) else { return Ok(None) };
        let previous = row.previous_secret.filter(|_| row.previous_live).and_then(|sealed| open(&sealed));
        Ok(Some(Signing { url: row.url, secrets: [Some(current), previous].into_iter().flatten().collect() }))
    }

    /// Up to `limit` facts of `source` after `after`, oldest first.
    pub async fn candidates(&self, source: Source, after: i64, limit: i64) -> Result<Vec<Candidate>, sqlx::Error> {
        let statement = match source {
            Source::Events => EVENT_CANDIDATES,
            Source::Shares => SHARE_CANDIDATES,
        };
        on_db!(&self.db, |pool| sqlx::query_as(statement).bind(after).bind(limit).fetch_all(pool).await)
    }

    pub async fn files(&self, handover_id: i64) -> Result<Vec<FileFacts>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(FILES).bind(handover_id).fetch_all(pool).await)
    }

    pub async fn cursor(&self, source: Source) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(CURSOR).bind(source.name()).fetch_one(pool).await)
    }

    pub async fn advance(&self, source: Source, to: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(ADVANCE).bind(source.name()).bind(to).execute(pool).await.map(drop))
    }
}
