-- The mail outbox, SQLite dialect: mails that must survive an SMTP outage (share notifications,
-- download receipts) are stored here first and delivered by the outbox worker with retries and
-- capped exponential backoff. One-time codes are never stored here: they are sent directly.
--
-- Lifecycle: pending -> sending -> sent, or back to pending after a failure (attempts + 1,
-- next_attempt_at pushed out), or dead after too many attempts. Every move is one conditional
-- UPDATE, so two workers never send the same row.
--
-- A share notification carries the share link, a secret token. The stored message is needed to
-- deliver it, and only until then: the UPDATE that marks a row 'sent' also sets message to an
-- empty blob, and the CHECK below refuses a 'sent' row that still has a body, so no link outlives
-- its delivery in the database. A 'dead' row keeps its body so that it can be queued again once
-- the relay is fixed.
CREATE TABLE mail_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    share_id        INTEGER REFERENCES shares (id) ON DELETE SET NULL, -- the share the mail is about; NULL once that share row is deleted (the record of the mail stays)
    kind            TEXT    NOT NULL,                -- 'share_notification', 'download_receipt', …; no CHECK, so a new kind needs no table rebuild
    envelope_from   TEXT,                            -- SMTP MAIL FROM of the message's envelope; NULL is the null sender
    recipient       TEXT    NOT NULL,                -- SMTP RCPT TO: the one envelope recipient
    subject         TEXT    NOT NULL DEFAULT '',     -- the Subject header as written, for the dashboard
    message         BLOB    NOT NULL,                -- the whole formatted RFC 5322 message; emptied when sent
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0), -- failed or interrupted deliveries so far
    next_attempt_at REAL    NOT NULL DEFAULT (unixepoch('subsec')),   -- a pending row is not tried before this (backoff)
    claimed_at      REAL,                            -- when a worker moved the row to 'sending'; a row stuck there is taken back
    last_error      TEXT,                            -- class of the last failure ('smtp 421', 'timeout', …); never addresses or reply text
    created_at      REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    sent_at         REAL,                            -- when the relay accepted the message
    CHECK (status <> 'sent' OR (length(message) = 0 AND sent_at IS NOT NULL))
);
-- The worker's "due pending rows, oldest first" query reads only pending rows, however many sent
-- rows pile up.
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at, id) WHERE status = 'pending';
-- Finding rows stuck in 'sending' after a crash.
CREATE INDEX mail_outbox_sending_idx ON mail_outbox (claimed_at) WHERE status = 'sending';
-- The dashboard's "mails of this share", and ON DELETE SET NULL when a share row is deleted.
CREATE INDEX mail_outbox_share_idx ON mail_outbox (share_id, id);
