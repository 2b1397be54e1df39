//! Replies' SQL: what a reply needs of the share it answers, and the reply a share already has.
//! A reply itself is an ordinary request (`file_requests.reply_to_share_id` names the share).

use super::RequestRepository;
use crate::on_db;

/// A share of files (or a note) as a reply to it needs it: whose it is, whether they allow
/// replies, and what it hands over, which the reply's message names.
#[derive(Debug, sqlx::FromRow)]
pub struct Answerable {
    pub sender_id: i64,
    pub allow_reply: bool,
    /// The handover's first file; none for a note.
    pub first_file: Option<String>,
}

const ANSWERABLE: &str = "SELECT s.sender_id, h.allow_reply,
                                 (SELECT f.original_name FROM files f WHERE f.handover_id = s.handover_id
                                   ORDER BY f.position LIMIT 1) AS first_file
                            FROM shares s JOIN handovers h ON h.id = s.handover_id
                           WHERE s.id = $1 AND s.kind = 'delivery'";
const REPLY_OF: &str = "SELECT s.id FROM file_requests r JOIN shares s ON s.handover_id = r.handover_id
                         WHERE r.reply_to_share_id = $1";

impl RequestRepository {
    /// The share `share_id` of files or a note, as a reply to it needs it.
    pub async fn answerable(&self, share_id: i64) -> Result<Option<Answerable>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(ANSWERABLE).bind(share_id).fetch_optional(pool).await)
    }

    /// The request share that replies to share `share_id`, if there is one.
    pub async fn reply_of(&self, share_id: i64) -> Result<Option<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(REPLY_OF).bind(share_id).fetch_optional(pool).await)
    }
}
