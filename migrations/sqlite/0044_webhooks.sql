-- Signed webhooks, SQLite dialect: endpoints that hear about shares, and the outbox of the messages
-- sent to them. A message is made from the share timeline (`share_events`) and from new shares, by
-- a dispatcher that follows both by id (`webhook_cursors`).
CREATE TABLE webhook_endpoints (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE, -- who registered it
    team            INTEGER NOT NULL CHECK (team IN (0, 1)), -- 1: every share of the team (an admin's); 0: the owner's shares
    url             TEXT    NOT NULL,          -- https, or http to a network the operator allows
    event_types     TEXT    NOT NULL,          -- space-separated codes (`share.opened share.downloaded`)
    secret          BLOB    NOT NULL,          -- the `whsec_…` secret, sealed with the row id (see row_seal)
    previous_secret BLOB,                      -- the secret before the last rotation, sealed likewise…
    previous_until  REAL,                      -- …which still signs until then
    enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    after_event_id  INTEGER NOT NULL,          -- timeline events up to this id happened before it existed
    after_share_id  INTEGER NOT NULL,          -- shares up to this id were created before it existed
    created_at      REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner_id);

CREATE TABLE webhook_messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    source          TEXT    NOT NULL,          -- what it tells: `event:ID`, `share:ID` or `test:RANDOM`; once per endpoint
    sender_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE, -- whose share: never sent while they are disabled or being deleted
    message_id      TEXT    NOT NULL UNIQUE,   -- the `webhook-id` header, the same on every attempt
    event_type      TEXT    NOT NULL,          -- `share.downloaded`, `webhook.test`, …
    body            TEXT    NOT NULL,          -- the JSON payload, signed as is on every attempt
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sending', 'delivered', 'dead', 'dropped')),
    attempts        INTEGER NOT NULL DEFAULT 0, -- failed attempts so far
    last_status     INTEGER,                   -- the HTTP status of the last answer, if any
    last_error      TEXT,                      -- a short class of the last failure, never a response body
    next_attempt_at REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    claimed_at      REAL,                      -- set while one worker sends it
    created_at      REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    delivered_at    REAL,
    UNIQUE (endpoint_id, source)
);
CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, id);

-- How far the dispatcher read each source, advanced by a conditional UPDATE.
CREATE TABLE webhook_cursors (
    name    TEXT    PRIMARY KEY,               -- `share_events` or `shares`
    last_id INTEGER NOT NULL
);
INSERT INTO webhook_cursors (name, last_id) SELECT 'share_events', coalesce(max(id), 0) FROM share_events;
INSERT INTO webhook_cursors (name, last_id) SELECT 'shares', coalesce(max(id), 0) FROM shares;
