-- Resumable downloads: the claim remembers which browser session made it, so that session (and
-- only it) may fetch the bytes again, in ranges, during the delivery grace; and how far the file
-- has been delivered to it, so the sender hears "completed" only once every byte went out.
ALTER TABLE shares ADD COLUMN claimed_session_id INTEGER REFERENCES sessions (id) ON DELETE SET NULL; -- the sessions row whose download claimed the share; a session rotation keeps its id
ALTER TABLE shares ADD COLUMN delivered_bytes INTEGER NOT NULL DEFAULT 0; -- length of the prefix of the file sent, without a gap, to the claiming session
ALTER TABLE shares ADD COLUMN delivered_at REAL; -- when that prefix first reached the whole file (the download completed)

-- A new event kind, download_completed. share_events.kind loses its CHECK (SQLite cannot drop a
-- constraint, so the table is rebuilt): the application's EventKind enum already refuses an
-- unknown stored value when it decodes one, the same choice mail_outbox made for its kind, and a
-- new kind then needs no rebuild. Nothing references share_events, so it can be dropped.
CREATE TABLE share_events_new (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    share_id INTEGER NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    kind     TEXT    NOT NULL, -- 'opened', 'downloaded' (the claim: "download started"), 'download_completed', …; decoded by EventKind
    at       REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
INSERT INTO share_events_new (id, share_id, kind, at) SELECT id, share_id, kind, at FROM share_events;
DROP TABLE share_events;
ALTER TABLE share_events_new RENAME TO share_events;
CREATE INDEX share_events_share_idx ON share_events (share_id, id);
