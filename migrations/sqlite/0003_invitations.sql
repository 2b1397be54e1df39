-- Invitations, SQLite dialect: an admin invites a sender by email with a one-time link, valid 72
-- hours, to choose a password. Only the link token's SHA-256 is kept.
CREATE TABLE invitations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT    NOT NULL UNIQUE,                                  -- hex SHA-256 of the link token
    email      TEXT    NOT NULL CHECK (email = lower(email)),            -- the invited address, lower-cased
    role       TEXT    NOT NULL DEFAULT 'sender' CHECK (role IN ('admin', 'sender')),
    invited_by INTEGER REFERENCES users (id) ON DELETE SET NULL,          -- the admin who invited
    created_at REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    expires_at REAL    NOT NULL,                                         -- the link stops working then
    used_at    REAL                                                      -- the link was used (once)
);
CREATE INDEX invitations_expires_idx ON invitations (expires_at);
