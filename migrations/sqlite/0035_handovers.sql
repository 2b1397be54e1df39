-- no-transaction
-- One handover, several files, several people. A handover is what one submission handed over:
-- files to one or more recipients, each recipient with a share of their own. Files
-- belong to the handover, not to a share, so the bytes are stored once; shares lose file_id
-- (SQLite cannot drop a UNIQUE column: shares is rebuilt with foreign keys off, the documented
-- way, since its children cascade on delete).
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE handovers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    sender_id  INTEGER NOT NULL REFERENCES users (id),
    created_at REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
INSERT INTO handovers (id, sender_id, created_at) SELECT id, sender_id, created_at FROM shares;
ALTER TABLE files ADD COLUMN handover_id INTEGER REFERENCES handovers (id);
ALTER TABLE files ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN purged_at REAL;
UPDATE files SET handover_id = (SELECT s.id FROM shares s WHERE s.file_id = files.id);
UPDATE files SET purged_at = (SELECT s.purged_at FROM shares s WHERE s.file_id = files.id);
CREATE TABLE shares_new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    handover_id           INTEGER NOT NULL REFERENCES handovers (id),
    sender_id             INTEGER NOT NULL REFERENCES users (id),
    token_hash            TEXT    NOT NULL UNIQUE,
    recipient_email       TEXT    NOT NULL,
    message               TEXT    NOT NULL DEFAULT '',
    lang                  TEXT    NOT NULL DEFAULT 'ja' CHECK (lang IN ('ja', 'en')),
    notify_on_download    INTEGER NOT NULL DEFAULT 1 CHECK (notify_on_download IN (0, 1)),
    status                TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'consumed', 'purged')),
    expires_at            REAL    NOT NULL,
    consumed_at           REAL,
    purged_at             REAL,
    revoked_at            REAL,
    purge_attempts        INTEGER NOT NULL DEFAULT 0,
    next_purge_attempt_at REAL,
    wrong_codes           INTEGER NOT NULL DEFAULT 0,
    locked_at             REAL,
    created_at            REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    claimed_session_id    INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
    delivered_bytes       INTEGER NOT NULL DEFAULT 0,
    delivered_at          REAL,
    delivery_started_at   REAL,
    name_file_in_mail     INTEGER NOT NULL DEFAULT 1 CHECK (name_file_in_mail IN (0, 1))
);
INSERT INTO shares_new SELECT id, id, sender_id, token_hash, recipient_email, message, lang, notify_on_download, status,
    expires_at, consumed_at, purged_at, revoked_at, purge_attempts, next_purge_attempt_at, wrong_codes, locked_at,
    created_at, claimed_session_id, delivered_bytes, delivered_at, delivery_started_at, name_file_in_mail FROM shares;
DROP TABLE shares;
ALTER TABLE shares_new RENAME TO shares;
CREATE INDEX shares_sender_idx ON shares (sender_id, id);
CREATE INDEX shares_handover_idx ON shares (handover_id);
CREATE INDEX shares_expiry_idx ON shares (expires_at) WHERE status = 'active';
CREATE INDEX shares_delivering_idx ON shares (COALESCE(delivery_started_at, expires_at)) WHERE status = 'consumed';
CREATE INDEX shares_retention_idx ON shares (id) WHERE status = 'purged' AND recipient_email <> '';
CREATE INDEX files_handover_idx ON files (handover_id, position);
-- A deletion case open at upgrade gains the handovers step, after the file records, before the rest.
UPDATE deletion_steps SET position = position + 1
 WHERE position > 11 AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'handovers');
INSERT INTO deletion_steps (case_id, position, store, action)
SELECT case_id, 12, 'handovers', 'delete' FROM deletion_steps WHERE store = 'file_records'
   AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'handovers');
COMMIT;
PRAGMA foreign_keys = ON;
