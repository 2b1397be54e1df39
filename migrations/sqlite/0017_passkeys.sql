-- Passkeys (WebAuthn), SQLite dialect: each one signs in alone (it verifies the person itself) or
-- stands as the second factor after a password.
CREATE TABLE passkeys (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id BLOB    NOT NULL UNIQUE,  -- the authenticator's id for it: one account only
    name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 64), -- the owner's label ("Phone")
    passkey       TEXT    NOT NULL,         -- the public key, signature counter and backup state (webauthn-rs JSON)
    created_at    REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    last_used_at  REAL                      -- the last sign-in it made
);
CREATE INDEX passkeys_user ON passkeys (user_id);

-- A passkey ceremony under way: the challenge sent to the browser and what its answer must show.
-- One per session and purpose, taken once (a replayed answer finds nothing), gone with the session.
CREATE TABLE passkey_ceremonies (
    session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    purpose    TEXT    NOT NULL CHECK (purpose IN ('register', 'sign_in', 'second_factor')),
    user_id    INTEGER REFERENCES users (id) ON DELETE CASCADE, -- whose (NULL: a sign-in that names nobody yet)
    state      TEXT    NOT NULL,        -- the ceremony's state (webauthn-rs JSON, holds the challenge)
    expires_at REAL    NOT NULL,        -- by the database clock
    PRIMARY KEY (session_id, purpose)
);
