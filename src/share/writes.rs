//! Every statement that changes a `shares` row: the share's state machine in one place (seed 000:
//! active → consumed → purged, never backwards; revoked and locked on the side). Each is one
//! conditional UPDATE whose WHERE holds the whole precondition, so callers in other modules run
//! them inside their own transactions (the code check, a deletion case) without restating a rule.
//! The retention sweep's scrub of old purged rows is the one exception: its statements are built
//! per table by the sweep, for its batches (`maintenance::sweep`).

use crate::{db::Sql, sql};

pub(crate) const INSERT_SHARE: Sql = sql!(
    "INSERT INTO shares (handover_id, sender_id, token_hash, recipient_email, message, lang,
                         notify_on_download, expires_at, name_file_in_mail, kind)
     VALUES ($1, $2, $3, $4, $5, $6, $7, " now " + " secs("$8") ", $9, $10) RETURNING id"
);
/// The claim, naming the session that made it ($2): only that session may fetch the bytes. Never
/// once the GC closed the share (see `CLOSE` in `lifecycle`): a claim that waited on the row while
/// the collector closed it would otherwise pass on a clock read before the deadline.
pub(crate) const MARK_CONSUMED: Sql = sql!(
    "UPDATE shares SET status = 'consumed', consumed_at = " now ", claimed_session_id = $2
      WHERE id = $1 AND status = 'active' AND kind = 'delivery' AND closed_at IS NULL AND expires_at > " now
);
/// A request answered (its uploader finished): nothing more arrives, and nobody fetches anything
/// through its link. Its expiry moves to when the sender's keeping ends less the delivery grace
/// ($2 seconds from now), so the GC's one rule for consumed shares (expiry plus grace) collects
/// the files when the request's retention ends.
pub(crate) const ANSWER_REQUEST: Sql = sql!(
    "UPDATE shares SET status = 'consumed', consumed_at = " now ", claimed_session_id = NULL,
            expires_at = " now " + " secs("$2") "
      WHERE id = $1 AND status = 'active' AND kind = 'request' AND closed_at IS NULL AND expires_at > " now
);
/// "Delete now" on an answered request: its keeping ends at once ($2 the delivery grace), so the
/// next GC pass removes the files as it removes any others.
pub(crate) const END_KEEPING: Sql = sql!(
    "UPDATE shares SET expires_at = " now " - " secs("$2") "
      WHERE id = $1 AND status = 'consumed' AND kind = 'request'"
);
/// The first byte is about to go to the claiming session: the delivery grace starts now (once).
pub(crate) const START_DELIVERY: Sql = sql!(
    "UPDATE shares SET delivery_started_at = " now "
      WHERE id = $1 AND status = 'consumed' AND delivery_started_at IS NULL"
);
/// The prefix of the file the recorded ranges cover ($2), of a file of $3 bytes: `delivered_bytes`
/// only grows, and the update that reaches the size sets `delivered_at`, after which none
/// matches: that one returns true (the download completed now; an empty file completes with the
/// first response that reached its end).
pub(crate) const RECORD_DELIVERY: Sql = sql!(
    "UPDATE shares SET delivered_bytes = $2,
            delivered_at = CASE WHEN $2 >= $3 THEN " now " ELSE NULL END
      WHERE id = $1 AND delivered_at IS NULL AND (delivered_bytes < $2 OR $2 >= $3)
      RETURNING delivered_bytes >= $3"
);
pub(crate) const MARK_PURGED: Sql = sql!(
    "UPDATE shares SET status = 'purged', purged_at = " now "
      WHERE id = $1 AND status <> 'purged'
        AND (status = 'consumed' OR expires_at <= " now ")"
);
/// Counts a failed delete, returning the failures before this one.
pub(crate) const COUNT_PURGE_FAILURE: Sql = Sql::same(
    "UPDATE shares SET purge_attempts = purge_attempts + 1 WHERE id = $1 AND status <> 'purged'
     RETURNING purge_attempts - 1",
);
pub(crate) const BACK_OFF_PURGE: Sql =
    sql!("UPDATE shares SET next_purge_attempt_at = " now " + " secs("$2") " WHERE id = $1");
pub(crate) const REVOKE: Sql = sql!(
    "UPDATE shares SET revoked_at = " now ", expires_at = " now "
      WHERE id = $1 AND status = 'active' AND expires_at > " now
);
pub(crate) const RENEW_LINK: Sql = sql!(
    "UPDATE shares SET token_hash = $2, locked_at = NULL, wrong_codes = 0
      WHERE id = $1 AND status = 'active' AND expires_at > " now
);
pub(crate) const UNLOCK: Sql = Sql::same(
    "UPDATE shares SET locked_at = NULL, wrong_codes = 0 WHERE id = $1 AND locked_at IS NOT NULL AND status = 'active'",
);

/// A share's wrong-code try, taken before a code is compared ($2 the share's cap).
pub(crate) const TAKE_CODE_TRY: Sql = Sql::same(
    "UPDATE shares SET wrong_codes = wrong_codes + 1
      WHERE id = $1 AND locked_at IS NULL AND wrong_codes < $2 RETURNING wrong_codes",
);
/// The try a right code took, given back: it was not wrong.
pub(crate) const REFUND_CODE_TRY: Sql =
    Sql::same("UPDATE shares SET wrong_codes = wrong_codes - 1 WHERE id = $1 AND wrong_codes > 0");
/// Too many wrong codes: no more codes until the sender unlocks it.
pub(crate) const LOCK: Sql = sql!("UPDATE shares SET locked_at = COALESCE(locked_at, " now ") WHERE id = $1");
/// A sender's deletion case ends every share of theirs that is still live.
pub(crate) const REVOKE_ALL_OF_SENDER: Sql = sql!(
    "UPDATE shares SET revoked_at = " now ", expires_at = " now "
      WHERE sender_id = $1 AND status = 'active' AND expires_at > " now
);
