-- Verifiable deletion of a sender's data (seed 003), PostgreSQL dialect. A case is opened by the
-- sender or an admin; one step per store records what was done there and what a second look
-- found; the evidence table keeps one row per finished attempt. None of these tables holds the
-- deleted data, addresses, file names or tokens: only internal ids, counts, classes and times.
-- The one exception is notify_email, kept only until the final mail has been sent.

-- States move forward only, each move one conditional UPDATE:
-- received -> validated -> in_progress -> (partially_completed ->) verification_pending -> completed,
-- and received | validated -> failed when the subject cannot be established.
CREATE TABLE deletion_cases (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reference          TEXT    NOT NULL UNIQUE,  -- opaque random reference shown to people; not derived from any id
    subject_id         BIGINT NOT NULL,         -- users.id whose data is deleted; no FOREIGN KEY: that row goes last
    subject_created_at timestamptz NOT NULL, -- with subject_id, tells this account from a later one that reuses the id
    actor_id           BIGINT,                  -- users.id of who opened the case; NULL from the command line
    actor_role         TEXT    NOT NULL CHECK (actor_role IN ('self', 'admin', 'operator')),
    reapplies          TEXT,                     -- reference of the case this one re-applies after a restore
    state              TEXT    NOT NULL DEFAULT 'received'
                       CHECK (state IN ('received', 'validated', 'in_progress', 'partially_completed',
                                        'verification_pending', 'completed', 'failed')),
    notify_email       TEXT,                     -- where the final mail goes; NULL once it is sent or given up
    final_mail         TEXT    CHECK (final_mail IN ('sent', 'undeliverable', 'none')),
    mail_attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at    timestamptz NOT NULL DEFAULT now(), -- a runner picks the case up from then
    lease_owner        TEXT,                     -- the runner working on the case…
    lease_until        timestamptz,                     -- …until then (a crashed runner's lease runs out)
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz                      -- completed or failed
);
-- At most one open case per account.
CREATE UNIQUE INDEX deletion_cases_open_subject_idx ON deletion_cases (subject_id)
    WHERE state NOT IN ('completed', 'failed');
CREATE INDEX deletion_cases_due_idx ON deletion_cases (next_attempt_at) WHERE state NOT IN ('completed', 'failed');

-- One row per store of a case, in the order the steps run.
CREATE TABLE deletion_steps (
    case_id         BIGINT NOT NULL REFERENCES deletion_cases (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,          -- run order
    store           TEXT    NOT NULL,          -- 'sessions', 'shares', 'stored_files', …
    action          TEXT    NOT NULL CHECK (action IN ('delete', 'anonymise', 'retain')),
    outcome         TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (outcome IN ('pending', 'deleted', 'not_found', 'retryable', 'needs_review',
                                       'documented_constraint')),
    reason          TEXT,                      -- documented constraint, or the class of the last failure
    found           BIGINT,                   -- what the first successful search by the store's key found
    remaining       BIGINT,                   -- what the last look found afterwards (0: verified)
    attempts        INTEGER NOT NULL DEFAULT 0, -- failed attempts since the last success or review
    next_attempt_at timestamptz,                      -- a retryable step waits until then (capped backoff)
    verified_at     timestamptz,                      -- when a second look last found nothing left
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (case_id, store)
);

-- One row per finished attempt of a step: the evidence. Counts and classes only.
CREATE TABLE deletion_evidence (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    case_id     BIGINT NOT NULL REFERENCES deletion_cases (id) ON DELETE CASCADE,
    store       TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    searched_by TEXT    NOT NULL,   -- the key searched, by name ('shares.sender_id'); never its value
    found       BIGINT,            -- rows or files this attempt's search found
    deleted     BIGINT,            -- rows or files this attempt removed
    remaining   BIGINT,            -- what the second look found
    detail      TEXT,               -- failure class or constraint; never data
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deletion_evidence_case_idx ON deletion_evidence (case_id, id);
