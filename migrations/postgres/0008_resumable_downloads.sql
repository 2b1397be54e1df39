-- Resumable downloads: the claim remembers which browser session made it, so that session (and
-- only it) may fetch the bytes again, in ranges, during the delivery grace; and how far the file
-- has been delivered to it, so the sender hears "completed" only once every byte went out.
ALTER TABLE shares
    ADD COLUMN claimed_session_id BIGINT REFERENCES sessions (id) ON DELETE SET NULL, -- the sessions row whose download claimed the share; a session rotation keeps its id
    ADD COLUMN delivered_bytes    BIGINT NOT NULL DEFAULT 0,                         -- length of the prefix of the file sent, without a gap, to the claiming session
    ADD COLUMN delivered_at       timestamptz;                                       -- when that prefix first reached the whole file (the download completed)

-- A new event kind, download_completed. The CHECK listing the kinds goes: the application's
-- EventKind enum already refuses an unknown stored value when it decodes one, the same choice
-- mail_outbox made for its kind, and a new kind then needs no migration.
ALTER TABLE share_events DROP CONSTRAINT share_events_kind_check;
