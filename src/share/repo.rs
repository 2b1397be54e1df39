//! SQL of shares and their files, both dialects side by side.

use super::{NewHandover, Share, ShareError, ShareKind, ShareStatus, note::SealedNote, writes};
use crate::{
    db::{Db, Dialect, Sql, Timestamp, seconds},
    i18n::Lang,
    on_db,
    session::Session,
    sql,
    text::{strip_invisible, strip_invisible_keeping_lines},
};

/// A stored file of a share's handover, for the download page.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct FileInfo {
    /// Its place among the handover's files (0 for the first), which its own download names.
    pub position: i32,
    pub storage_key: String,
    pub original_name: String,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    /// Where its virus scan is (NULL: not subject to it); read only where a request's uploader
    /// sees what they left.
    #[sqlx(default)]
    pub scan_state: Option<crate::scan::ScanState>,
    #[sqlx(default)]
    pub scan_finding: Option<String>,
}

/// Where the notice of a locked share goes, and what it names.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LockTarget {
    pub sender_email: String,
    pub sender_lang: Lang,
    pub recipient_email: String,
    /// The handover's file names, in order.
    #[sqlx(skip)]
    pub file_names: Vec<String>,
}

/// Where a download receipt goes, and what it says.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ReceiptTarget {
    pub sender_email: String,
    pub sender_lang: Lang,
    /// The zone the sender reads times in (an IANA name), if they chose one.
    pub sender_time_zone: Option<String>,
    pub recipient_email: String,
    /// The handover's file names, in order.
    #[sqlx(skip)]
    pub file_names: Vec<String>,
    /// When the download was claimed (it started).
    pub started_at: Option<Timestamp>,
    /// When its last byte went out (it completed).
    pub completed_at: Option<Timestamp>,
}

/// How many shares are in one state (for the metrics).
#[derive(Clone, Copy, Debug, sqlx::FromRow)]
pub struct StatusTally {
    pub status: ShareStatus,
    pub shares: i64,
}

#[derive(sqlx::FromRow)]
struct ShareRow {
    id: i64,
    handover_id: i64,
    recipient_email: String,
    sender_name: String,
    message: String,
    lang: Lang,
    status: ShareStatus,
    kind: ShareKind,
    expires_at: Timestamp,
    locked: bool,
    file_count: i64,
    held: bool,
}

impl TryFrom<ShareRow> for Share {
    type Error = sqlx::Error;

    fn try_from(row: ShareRow) -> Result<Self, sqlx::Error> {
        Ok(Share {
            id: row.id,
            handover_id: row.handover_id,
            recipient_email: row.recipient_email,
            // Also what was stored before names and messages were cleaned.
            sender_name: strip_invisible(&row.sender_name),
            message: strip_invisible_keeping_lines(&row.message),
            lang: row.lang,
            status: row.status,
            kind: row.kind,
            expires_at: row.expires_at,
            locked: row.locked,
            file_count: row.file_count,
            held: row.held,
        })
    }
}

/// One line of `watasu share list`: a recipient's share, and the handover it is part of.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct ShareListing {
    pub id: i64,
    pub handover_id: i64,
    pub status: ShareStatus,
    pub recipient_email: String,
    #[serde(serialize_with = "serialize_timestamp")]
    pub expires_at: Timestamp,
    pub revoked: bool,
    pub expired: bool,
    /// How many files the handover holds (none for a note).
    pub files: i64,
    pub note: bool,
}

fn serialize_timestamp<S: serde::Serializer>(at: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

#[derive(Clone, Debug)]
pub struct ShareRepository {
    db: Db,
}

/// The handover row, only while its sender is enabled: an upload that was still streaming when
/// the account was disabled (or its deletion case opened) must not create a share behind the case.
/// PostgreSQL adds `FOR SHARE`: it waits for a transaction disabling the account and then sees its
/// commit, and holds the row so that one cannot commit in between (SQLite's write transaction
/// already serialises the two).
pub(crate) const INSERT_HANDOVER: Sql = sql!(
    "INSERT INTO handovers (sender_id) SELECT id FROM users WHERE id = $1 AND disabled_at IS NULL"
    { sqlite: "", postgres: " FOR SHARE" } " RETURNING id"
);
/// The sender lets the recipients of handover $1 reply with files.
const ALLOW_REPLY: Sql = Sql::same("UPDATE handovers SET allow_reply = $2 WHERE id = $1");
pub(crate) const INSERT_FILE: Sql = Sql::same(
    "INSERT INTO files (owner_id, handover_id, position, storage_key, original_name, content_type, size_bytes,
                        sha256, crc32, scan_state, sealing, wrapped_key, file_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
);
const SEAL_NOTE: Sql = Sql::same("UPDATE handovers SET has_note = TRUE, note_sealed = $2, note_key = $3 WHERE id = $1");
/// A finished upload's row goes with the share made of its file: only the sender's own, finished,
/// unexpired upload (never a file request's), and only once (a second submission finds nothing).
const CLAIM_UPLOAD: Sql = sql!(
    "DELETE FROM uploads WHERE public_id = $1 AND owner_id = $2 AND storage_key = $3 AND request_share_id IS NULL
        AND sha256 IS NOT NULL AND expires_at > " now
);
/// The claim a browser made of a share: when, and whether it was a secret note.
#[derive(Clone, Copy, Debug, sqlx::FromRow)]
pub struct ClaimedHere {
    pub at: Timestamp,
    pub note: bool,
}

/// A share's sender as the recipient may contact them (the notification's Reply-To already gives
/// the address).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SenderContact {
    pub name: String,
    pub email: String,
}

const LIVE_BY_TOKEN_HASH: Sql = sql!("SELECT s.id, s.handover_id, s.recipient_email, u.display_name AS sender_name, s.message,
                 s.lang, s.status, s.kind, s.expires_at, s.locked_at IS NOT NULL AS locked,
                 (SELECT COUNT(*) FROM files f WHERE f.handover_id = s.handover_id) AS file_count,
                 s.kind = 'delivery' AND EXISTS (SELECT 1 FROM files f WHERE f.handover_id = s.handover_id
                            AND f.scan_state IN ('pending', 'infected', 'refused')) AS held
            FROM shares s JOIN users u ON u.id = s.sender_id
           WHERE s.token_hash = $1 AND s.expires_at > " now);
const LIST_ALL: Sql = sql!(
    "SELECT s.id, s.handover_id, s.status, s.recipient_email, s.expires_at, s.revoked_at IS NOT NULL AS revoked,
            s.expires_at <= " now " AS expired,
            (SELECT COUNT(*) FROM files f WHERE f.handover_id = s.handover_id) AS files, h.has_note AS note
       FROM shares s JOIN handovers h ON h.id = s.handover_id WHERE s.kind = 'delivery' ORDER BY s.id DESC"
);

/// The names of the files of share $1's handover, in order, as the sender's mails show them.
const FILE_NAMES: &str = "SELECT f.original_name FROM shares s JOIN files f ON f.handover_id = s.handover_id
                           WHERE s.id = $1 ORDER BY f.position";

/// Deliveries only: a request's states mean other things (see `request`).
const TALLY_BY_STATUS: &str = "SELECT status, COUNT(*) AS shares FROM shares WHERE kind = 'delivery' GROUP BY status";
/// The bytes of every file still stored, each once however many shares it has. PostgreSQL's SUM
/// of a bigint is a numeric: cast back so both backends answer an i64.
const STORED_BYTES: Sql = sql!(
    "SELECT COALESCE(SUM(size_bytes), 0)" { sqlite: "", postgres: "::bigint" } " FROM files WHERE purged_at IS NULL"
);

impl ShareRepository {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Inserts the handover, its files and a share per recipient (with `token_hashes` in the
    /// recipients' order) in one transaction, taking the row of each finished upload a file came
    /// from; refused for a disabled sender, and `UploadUnavailable` when an upload is not the
    /// sender's, not finished, or used. Answers the shares' ids in the recipients' order.
    pub async fn insert(&self, new: &NewHandover, token_hashes: &[String]) -> Result<Vec<i64>, ShareError> {
        let ttl = seconds(new.ttl);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            for file in &new.files {
                let Some(upload) = &file.upload_id else { continue };
                let claimed = sqlx::query(pool.sql(&CLAIM_UPLOAD))
                    .bind(upload)
                    .bind(new.sender_id)
                    .bind(&file.stored.key)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if claimed != 1 {
                    return Err(ShareError::UploadUnavailable);
                }
            }
            let handover_id: Option<i64> =
                sqlx::query_scalar(pool.sql(&INSERT_HANDOVER)).bind(new.sender_id).fetch_optional(&mut *tx).await?;
            let Some(handover_id) = handover_id else { return Err(ShareError::SenderDisabled) };
            if new.allow_reply {
                sqlx::query(pool.sql(&ALLOW_REPLY)).bind(handover_id).bind(true).execute(&mut *tx).await?;
            }
            if let Some(note) = &new.note {
                let sealed = note.seal.seal(handover_id, &note.note);
                let query = sqlx::query(pool.sql(&SEAL_NOTE)).bind(handover_id).bind(sealed.sealed);
                query.bind(sealed.wrapped_key).execute(&mut *tx).await?;
            }
            for (position, file) in (0_i64..).zip(&new.files) {
                sqlx::query(pool.sql(&INSERT_FILE))
                    .bind(new.sender_id)
                    .bind(handover_id)
                    .bind(position)
                    .bind(&file.stored.key)
                    .bind(&file.name)
                    .bind(&file.content_type)
                    .bind(i64::try_from(file.stored.size_bytes).unwrap_or(i64::MAX))
                    .bind(&file.stored.sha256)
                    .bind(i64::from(file.stored.crc32))
                    .bind(new.scan.then_some(crate::scan::ScanState::Pending))
                    .bind(file.stored.sealing())
                    .bind(file.stored.sealed.as_ref().map(|key| key.wrapped.clone()))
                    .bind(file.stored.sealed.as_ref().map(|key| key.key_id.clone()))
                    .execute(&mut *tx)
                    .await?;
            }
            let mut share_ids = Vec::with_capacity(new.recipients.len());
            for (recipient, token_hash) in new.recipients.iter().zip(token_hashes) {
                let share_id = sqlx::query_scalar(pool.sql(&writes::INSERT_SHARE))
                    .bind(handover_id)
                    .bind(new.sender_id)
                    .bind(token_hash)
                    .bind(recipient.as_str())
                    .bind(&new.message)
                    .bind(new.lang)
                    .bind(new.notify_on_download)
                    .bind(ttl)
                    .bind(new.name_file_in_mail)
                    .bind(super::ShareKind::Delivery)
                    .fetch_one(&mut *tx)
                    .await?;
                share_ids.push(share_id);
            }
            tx.commit().await?;
            Ok(share_ids)
        })
    }

    /// The share with this token hash, if it has not expired by the database's clock.
    pub async fn find_live_by_token_hash(&self, token_hash: &str) -> Result<Option<Share>, sqlx::Error> {
        let row: Option<ShareRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LIVE_BY_TOKEN_HASH)).bind(token_hash).fetch_optional(pool).await?
        });
        row.map(Share::try_from).transpose()
    }

    /// The shares of a handover, in the order they were made.
    pub async fn share_ids_of_handover(&self, handover_id: i64) -> Result<Vec<i64>, sqlx::Error> {
        const SQL: &str = "SELECT id FROM shares WHERE handover_id = $1 ORDER BY id";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(handover_id).fetch_all(pool).await)
    }

    /// The share with this id, whatever its state (for the sender's side, never for recipients).
    pub async fn find_by_id(&self, id: i64) -> Result<Option<Share>, sqlx::Error> {
        const SQL: &str = "SELECT s.id, s.handover_id, s.recipient_email, u.display_name AS sender_name, s.message,
                                  s.lang, s.status, s.kind, s.expires_at, s.locked_at IS NOT NULL AS locked,
                                  (SELECT COUNT(*) FROM files f WHERE f.handover_id = s.handover_id) AS file_count,
                                  s.kind = 'delivery' AND EXISTS (SELECT 1 FROM files f WHERE f.handover_id = s.handover_id
                                             AND f.scan_state IN ('pending', 'infected', 'refused')) AS held
                             FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.id = $1";
        let row: Option<ShareRow> = on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(id).fetch_optional(pool).await?);
        row.map(Share::try_from).transpose()
    }

    /// Who to tell that a share was downloaded: the sender's address, language and zone, the recipient
    /// and the file names — only when the sender asked for it on this share.
    pub async fn receipt_target(&self, share_id: i64) -> Result<Option<ReceiptTarget>, sqlx::Error> {
        const SQL: &str = "SELECT u.email AS sender_email, u.lang AS sender_lang, u.time_zone AS sender_time_zone,
                                  s.recipient_email, s.consumed_at AS started_at, s.delivered_at AS completed_at
                             FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.id = $1 AND s.notify_on_download";
        let target: Option<ReceiptTarget> =
            on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_optional(pool).await?);
        let Some(target) = target else { return Ok(None) };
        Ok(Some(ReceiptTarget { file_names: self.file_names(share_id).await?, ..target }))
    }

    /// Where the notice that the share locked goes (its sender, always: a lock needs them).
    pub async fn lock_target(&self, share_id: i64) -> Result<Option<LockTarget>, sqlx::Error> {
        const SQL: &str = "SELECT u.email AS sender_email, u.lang AS sender_lang, s.recipient_email
                             FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.id = $1";
        let target: Option<LockTarget> =
            on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_optional(pool).await?);
        let Some(target) = target else { return Ok(None) };
        Ok(Some(LockTarget { file_names: self.file_names(share_id).await?, ..target }))
    }

    /// The names of the files of a share's handover, in order, for its sender's mails.
    async fn file_names(&self, share_id: i64) -> Result<Vec<String>, sqlx::Error> {
        let names: Vec<String> =
            on_db!(&self.db, |pool| sqlx::query_scalar(FILE_NAMES).bind(share_id).fetch_all(pool).await?);
        Ok(names.iter().map(|name| strip_invisible(name)).collect())
    }

    /// Every share, newest first (for scripts; the dashboard pages through its own list).
    pub async fn list_all(&self) -> Result<Vec<ShareListing>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&LIST_ALL)).fetch_all(pool).await)
    }

    /// The id of the share with this token hash, whatever its state.
    pub async fn id_by_token_hash(&self, token_hash: &str) -> Result<Option<i64>, sqlx::Error> {
        const SQL: &str = "SELECT id FROM shares WHERE token_hash = $1";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(token_hash).fetch_optional(pool).await)
    }

    /// The files of the share's handover, in order, as the notification mail names them: whether
    /// the sender let it name them, then each file's name and size.
    pub async fn files_for_mail(&self, share_id: i64) -> Result<Vec<(bool, String, i64)>, sqlx::Error> {
        const SQL: &str = "SELECT s.name_file_in_mail, f.original_name, f.size_bytes
               FROM shares s JOIN files f ON f.handover_id = s.handover_id
                            WHERE s.id = $1 ORDER BY f.position";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_all(pool).await)
    }

    /// Who sent the share with this token hash, whatever its state: the pages that end the
    /// recipient's flow offer to write to them.
    pub async fn sender_contact(&self, token_hash: &str) -> Result<Option<SenderContact>, sqlx::Error> {
        const SQL: &str = "SELECT u.display_name AS name, u.email FROM shares s JOIN users u ON u.id = s.sender_id
                            WHERE s.token_hash = $1";
        on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(token_hash).fetch_optional(pool).await)
    }

    /// When `session` claimed the share with this token hash, and whether it was a note; `None`
    /// when it did not (another session did, nobody yet, or the request came on a cookie from
    /// before a regeneration).
    pub async fn claimed_here(&self, token_hash: &str, session: &Session) -> Result<Option<ClaimedHere>, sqlx::Error> {
        const SQL: &str = "SELECT s.consumed_at AS at, h.has_note AS note
                             FROM shares s JOIN sessions c ON c.id = s.claimed_session_id
                             JOIN handovers h ON h.id = s.handover_id
                            WHERE s.token_hash = $1 AND s.claimed_session_id = $2 AND c.id_hash = $3
                              AND s.consumed_at IS NOT NULL";
        on_db!(&self.db, |pool| sqlx::query_as(SQL)
            .bind(token_hash)
            .bind(session.id)
            .bind(&session.id_hash)
            .fetch_optional(pool)
            .await)
    }

    /// Shares per state, in one pass over the table (states without shares are absent).
    pub async fn tally_by_status(&self) -> Result<Vec<StatusTally>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(TALLY_BY_STATUS).fetch_all(pool).await)
    }

    /// The bytes of the files still stored (for the metrics).
    pub async fn stored_bytes(&self) -> Result<i64, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&STORED_BYTES)).fetch_one(pool).await)
    }

    /// The sealed secret note of share `share_id`'s handover, with the handover's id it is sealed
    /// to and its wrapped key, until it is destroyed. The share must come from an authorisation
    /// result or a claim, never a request.
    pub async fn sealed_note(&self, share_id: i64) -> Result<Option<SealedNote>, sqlx::Error> {
        const SQL: &str =
            "SELECT h.id, h.note_sealed, h.note_key FROM shares s JOIN handovers h ON h.id = s.handover_id
                            WHERE s.id = $1 AND h.note_sealed IS NOT NULL";
        let row: Option<(i64, Vec<u8>, Option<Vec<u8>>)> =
            on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share_id).fetch_optional(pool).await)?;
        Ok(row.map(|(handover_id, sealed, wrapped_key)| SealedNote { handover_id, sealed, wrapped_key }))
    }

    /// The file a share names: its handover's (first) file. The share must come from an
    /// The files a share hands over: its handover's, in order. The share must come from an
    /// authorisation result, never a request.
    pub async fn files_of(&self, share: &Share) -> Result<Vec<FileInfo>, sqlx::Error> {
        const SQL: &str = "SELECT position, storage_key, original_name, content_type, size_bytes, sha256 FROM files
                            WHERE handover_id = $1 ORDER BY position";
        let files: Vec<FileInfo> =
            on_db!(&self.db, |pool| sqlx::query_as(SQL).bind(share.handover_id).fetch_all(pool).await?);
        // The names go on the download page.
        Ok(files.into_iter().map(|f| FileInfo { original_name: strip_invisible(&f.original_name), ..f }).collect())
    }
}
