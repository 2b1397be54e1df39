-- Second factors after a password (TOTP and recovery codes), and the sign-ins waiting for one.

-- One authenticator app per account. Active only once confirmed by a first correct code.
CREATE TABLE totp_factors (
    user_id       INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_sealed BLOB    NOT NULL,   -- AES-256-GCM of the RFC 6238 secret under a key derived from the instance secret
    confirmed_at  REAL,               -- NULL while enrolment waits for its first correct code
    last_step     INTEGER,            -- the last accepted 30-second step: a code of it or an earlier one is a replay
    created_at    REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);

-- One-time recovery codes, used in place of a TOTP code when the phone is lost.
CREATE TABLE recovery_codes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  TEXT    NOT NULL UNIQUE,  -- hex SHA-256 of the normalised code; the code itself is shown once and never stored
    used_at    REAL,                     -- set once, when the code signs someone in
    created_at REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id);

-- A session whose password was right and that still owes a second factor (or its enrolment).
-- The session stays signed out until then.
CREATE TABLE pending_sign_ins (
    session_id INTEGER PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose    TEXT    NOT NULL CHECK (purpose IN ('verify', 'enrol')), -- enter a factor, or set one up (the team requires it)
    expires_at REAL    NOT NULL          -- by the database clock
);
