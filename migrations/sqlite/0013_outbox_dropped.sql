-- A share notification whose share can no longer be downloaded (revoked, expired, consumed,
-- purged or deleted) by the time it would be sent is not sent: the row becomes 'dropped', with
-- its body emptied like a sent one. SQLite cannot change a CHECK in place, so the table is rebuilt
-- with the same columns plus the new status; nothing references mail_outbox.
CREATE TABLE mail_outbox_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    share_id        INTEGER REFERENCES shares (id) ON DELETE SET NULL, -- the share the mail is about; NULL once that share row is deleted (the record of the mail stays)
    kind            TEXT    NOT NULL,                -- 'share_notification', 'download_receipt', …; no CHECK, so a new kind needs no table rebuild
    envelope_from   TEXT,                            -- SMTP MAIL FROM of the message's envelope; NULL is the null sender
    recipient       TEXT    NOT NULL,                -- SMTP RCPT TO: the one envelope recipient
    subject         TEXT    NOT NULL DEFAULT '',     -- the Subject header as written, for the dashboard
    message         BLOB    NOT NULL,                -- the whole formatted RFC 5322 message (sealed); emptied when sent, dead or dropped
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'dead', 'dropped')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0), -- failed or interrupted deliveries so far
    next_attempt_at REAL    NOT NULL DEFAULT (unixepoch('subsec')),   -- a pending row is not tried before this (backoff)
    claimed_at      REAL,                            -- when a worker moved the row to 'sending'; a row stuck there is taken back
    last_error      TEXT,                            -- class of the last failure ('smtp 421', 'timeout', …); never addresses or reply text
    created_at      REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    sent_at         REAL,                            -- when the relay accepted the message
    CHECK (status <> 'sent' OR (length(message) = 0 AND sent_at IS NOT NULL))
);
INSERT INTO mail_outbox_new (id, share_id, kind, envelope_from, recipient, subject, message, status, attempts,
                             next_attempt_at, claimed_at, last_error, created_at, sent_at)
     SELECT id, share_id, kind, envelope_from, recipient, subject, message, status, attempts,
            next_attempt_at, claimed_at, last_error, created_at, sent_at
       FROM mail_outbox;
DROP TABLE mail_outbox;
ALTER TABLE mail_outbox_new RENAME TO mail_outbox;
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX mail_outbox_sending_idx ON mail_outbox (claimed_at) WHERE status = 'sending';
CREATE INDEX mail_outbox_share_idx ON mail_outbox (share_id, id);
