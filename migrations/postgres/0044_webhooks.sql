-- Signed webhooks, PostgreSQL dialect: endpoints that hear about shares, and the outbox of the
-- messages sent to them. A message is made from the share timeline (`share_events`) and from new
-- shares, by a dispatcher that follows both by id (`webhook_cursors`).
CREATE TABLE webhook_endpoints (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id        BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE, -- who registered it
    team            BOOLEAN NOT NULL,          -- true: every share of the team (an admin's); false: the owner's shares
    url             TEXT    NOT NULL,          -- https, or http to a network the operator allows
    event_types     TEXT    NOT NULL,          -- space-separated codes (`share.opened share.downloaded`)
    secret          BYTEA   NOT NULL,          -- the `whsec_…` secret, sealed with the row id (see row_seal)
    previous_secret BYTEA,                     -- the secret before the last rotation, sealed likewise…
    previous_until  timestamptz,               -- …which still signs until then
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    after_event_id  BIGINT  NOT NULL,          -- timeline events up to this id happened before it existed
    after_share_id  BIGINT  NOT NULL,          -- shares up to this id were created before it existed
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner_id);

CREATE TABLE webhook_messages (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id     BIGINT  NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    source          TEXT    NOT NULL,          -- what it tells: `event:ID`, `share:ID` or `test:RANDOM`; once per endpoint
    sender_id       BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE, -- whose share: never sent while they are disabled or being deleted
    message_id      TEXT    NOT NULL UNIQUE,   -- the `webhook-id` header, the same on every attempt
    event_type      TEXT    NOT NULL,          -- `share.downloaded`, `webhook.test`, …
    body            TEXT    NOT NULL,          -- the JSON payload, signed as is on every attempt
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sending', 'delivered', 'dead', 'dropped')),
    attempts        INTEGER NOT NULL DEFAULT 0, -- failed attempts so far
    last_status     INTEGER,                   -- the HTTP status of the last answer, if any
    last_error      TEXT,                      -- a short class of the last failure, never a response body
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_at      timestamptz,               -- set while one worker sends it
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (endpoint_id, source)
);
CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, id);

-- How far the dispatcher read each source, advanced by a conditional UPDATE.
CREATE TABLE webhook_cursors (
    name    TEXT   PRIMARY KEY,                -- `share_events` or `shares`
    last_id BIGINT NOT NULL
);
INSERT INTO webhook_cursors (name, last_id) SELECT 'share_events', coalesce(max(id), 0) FROM share_events;
INSERT INTO webhook_cursors (name, last_id) SELECT 'shares', coalesce(max(id), 0) FROM shares;
