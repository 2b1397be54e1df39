-- The whole data model of watasu, SQLite dialect. Times are REAL Unix seconds from
-- unixepoch('subsec'): the database's clock decides what has expired.

-- People who send files. Recipients have no account.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT    NOT NULL UNIQUE CHECK (email = lower(email)), -- sign-in name, stored lower-cased
    display_name  TEXT    NOT NULL,                                   -- shown to recipients as the sender
    password_hash TEXT    NOT NULL,                                   -- argon2id PHC string
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'sender')),
    lang          TEXT    NOT NULL DEFAULT 'ja' CHECK (lang IN ('ja', 'en')), -- language of their pages and default of their shares' mails
    created_at    REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    disabled_at   REAL                                                -- set when an admin disables the account
);

-- Stored file contents. One file belongs to exactly one share.
CREATE TABLE files (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id      INTEGER NOT NULL REFERENCES users (id),
    storage_key   TEXT    NOT NULL UNIQUE,   -- random name in the storage dir, never derived from user input
    original_name TEXT    NOT NULL,          -- the name the sender's file had; shown only after verification
    content_type  TEXT    NOT NULL,
    size_bytes    INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256        TEXT    NOT NULL,          -- hex digest of the content, shown to the recipient
    created_at    REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);

-- One file handed to one recipient. Lifecycle: active -> consumed -> purged, forward only.
CREATE TABLE shares (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id               INTEGER NOT NULL UNIQUE REFERENCES files (id), -- one share owns one file, so GC never takes another share's file
    sender_id             INTEGER NOT NULL REFERENCES users (id),
    token_hash            TEXT    NOT NULL UNIQUE,  -- hex SHA-256 of the 256-bit link token; the token itself is never stored
    recipient_email       TEXT    NOT NULL,         -- codes go only here
    message               TEXT    NOT NULL DEFAULT '',
    lang                  TEXT    NOT NULL DEFAULT 'ja' CHECK (lang IN ('ja', 'en')), -- language of the notification mail
    notify_on_download    INTEGER NOT NULL DEFAULT 1 CHECK (notify_on_download IN (0, 1)),
    status                TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'consumed', 'purged')),
    expires_at            REAL    NOT NULL,
    consumed_at           REAL,             -- when the one download was claimed
    purged_at             REAL,             -- when the file was gone from storage
    revoked_at            REAL,             -- set with expires_at = now when the sender ends the share early
    purge_attempts        INTEGER NOT NULL DEFAULT 0,
    next_purge_attempt_at REAL,             -- failed deletions wait until then (exponential backoff)
    wrong_codes           INTEGER NOT NULL DEFAULT 0, -- wrong codes across all of the share's codes
    locked_at             REAL,             -- too many wrong codes: no more codes until the sender unlocks
    created_at            REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
-- Keeps an empty GC pass cheap however many purged rows pile up (NULLs sort first in SQLite).
CREATE INDEX shares_purgeable_idx ON shares (next_purge_attempt_at, id) WHERE status <> 'purged';
CREATE INDEX shares_sender_idx ON shares (sender_id, id);

-- Server-side sessions. The cookie holds 256 random bits; only their SHA-256 is kept here.
CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    id_hash      TEXT    NOT NULL UNIQUE,              -- hex SHA-256 of the cookie value
    user_id      INTEGER REFERENCES users (id) ON DELETE CASCADE, -- signed-in sender, if any
    csrf_secret  TEXT    NOT NULL,                     -- expected value of the form / header CSRF token
    created_at   REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    last_seen_at REAL    NOT NULL DEFAULT (unixepoch('subsec')), -- idle expiry counts from here
    expires_at   REAL    NOT NULL                      -- absolute expiry
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- A verified recipient's permission to download one share, tied to one session.
CREATE TABLE download_grants (
    session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    share_id   INTEGER NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    expires_at REAL    NOT NULL,
    created_at REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    PRIMARY KEY (session_id, share_id)
);
CREATE INDEX download_grants_share_idx ON download_grants (share_id);

-- One-time codes mailed to a share's recipient. Only an HMAC of the code is kept.
CREATE TABLE otp_challenges (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    share_id       INTEGER NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    session_id     INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, -- the browser that asked
    code_mac       TEXT    NOT NULL,           -- hex HMAC-SHA256(pepper, challenge id || code)
    expires_at     REAL    NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0, -- wrong tries, at most 5
    consumed_at    REAL,                       -- the right code was entered
    invalidated_at REAL,                       -- a newer code replaced this one
    created_at     REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
CREATE INDEX otp_challenges_share_session_idx ON otp_challenges (share_id, session_id);
CREATE INDEX otp_challenges_session_idx ON otp_challenges (session_id);
CREATE INDEX otp_challenges_expires_idx ON otp_challenges (expires_at);

-- What happened to a share, for the sender's timeline. No tokens, codes or addresses.
CREATE TABLE share_events (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    share_id INTEGER NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    kind     TEXT    NOT NULL CHECK (kind IN ('opened', 'code_sent', 'code_mail_failed', 'code_failed',
                                              'locked', 'unlocked', 'verified', 'downloaded', 'refused',
                                              'revoked', 'purged')),
    at       REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
CREATE INDEX share_events_share_idx ON share_events (share_id, id);

-- Sliding-window rate limits: one row per counted attempt in a bucket such as "code-mail:share:42".
CREATE TABLE rate_limit_hits (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    bucket TEXT    NOT NULL,
    at     REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
CREATE INDEX rate_limit_hits_bucket_idx ON rate_limit_hits (bucket, at);
CREATE INDEX rate_limit_hits_at_idx ON rate_limit_hits (at);
