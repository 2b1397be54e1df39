-- Maintenance that proves itself (seed 004), PostgreSQL dialect: a ledger of every sweep run and of
-- what it did to each row, and leases that keep one kind of sweep from running twice at once.
-- The ledger names rows by id only: never an address, a token or a file name.

-- One run of a sweep (or of every sweep: kind 'all'), however it was triggered.
-- Lifecycle: accepted -> running -> succeeded | partial | failed, forward only, each move one
-- conditional UPDATE. 'partial' means the run stopped at its batch or time cap, met a sweep that
-- another run held, or had rows it could not handle: the next run picks up the rest.
CREATE TABLE maintenance_runs (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                 TEXT    NOT NULL,  -- 'all', 'sessions', 'codes', 'invitations', 'outbox', 'rate_limits', 'share_gc', 'share_retention'
    trigger              TEXT    NOT NULL CHECK (trigger IN ('timer', 'request', 'http', 'cli')),
    idempotency_key_hash TEXT    NOT NULL UNIQUE, -- hex SHA-256 of the Idempotency-Key (or of a generated one): the same key gives back the same run
    state                TEXT    NOT NULL DEFAULT 'accepted'
                                 CHECK (state IN ('accepted', 'running', 'succeeded', 'partial', 'failed')),
    cutoff               timestamptz,            -- the database's clock when the run started, fixed for the whole run
    batches              BIGINT  NOT NULL DEFAULT 0,
    deleted              BIGINT  NOT NULL DEFAULT 0,
    skipped              BIGINT  NOT NULL DEFAULT 0, -- no longer expired when the delete re-checked
    already_gone         BIGINT  NOT NULL DEFAULT 0,
    failed               BIGINT  NOT NULL DEFAULT 0,
    note                 TEXT,              -- why a run is partial or failed ('time cap', 'sessions busy', 'database unavailable'); never data
    accepted_at          timestamptz NOT NULL DEFAULT now(),
    started_at           timestamptz,
    finished_at          timestamptz
);
-- The admin page: newest runs, and failures first.
CREATE INDEX maintenance_runs_accepted_idx ON maintenance_runs (accepted_at);
CREATE INDEX maintenance_runs_open_idx ON maintenance_runs (state) WHERE state IN ('accepted', 'running');

-- What a run did to one row.
CREATE TABLE maintenance_items (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      BIGINT  NOT NULL REFERENCES maintenance_runs (id) ON DELETE CASCADE,
    target_kind TEXT    NOT NULL, -- 'session', 'code', 'invitation', 'mail', 'rate_limit_hit', 'share', 'share_personal_data'
    target_id   BIGINT  NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('deleted', 'skipped', 'already_gone', 'failed')),
    reason      TEXT,             -- for 'failed': a class such as 'permission denied'; never data
    at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, target_kind, target_id) -- a batch repeated within a run records nothing twice
);

-- One row per kind of sweep while a run holds it; a holder that dies stops renewing and its lease
-- runs out. The row 'http_trigger' spaces out authenticated triggers the same way.
CREATE TABLE maintenance_leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,  -- the run id holding it
    expires_at timestamptz NOT NULL
);

-- The retention sweep looks only at purged shares that still carry personal data.
CREATE INDEX shares_retention_idx ON shares (id) WHERE status = 'purged' AND recipient_email <> '';
