-- Resumable (tus) uploads in progress, and finished ones not yet made into a share. A row is
-- deleted when its file becomes a share's, when the sender terminates it, or by the GC once
-- expired. Times are REAL Unix seconds, like everywhere.
CREATE TABLE uploads (
    id            INTEGER PRIMARY KEY AUTOINCREMENT, -- internal (the maintenance ledger names uploads by it)
    public_id     TEXT    NOT NULL UNIQUE,          -- the random 64-hex id in /uploads/{id}; never the storage key
    owner_id      INTEGER NOT NULL REFERENCES users (id), -- the sender; nobody else may see or touch it
    storage_key   TEXT    NOT NULL UNIQUE,          -- random name in the storage dir (".part-" prefix until finished)
    upload_length INTEGER NOT NULL CHECK (upload_length >= 0),             -- declared total size (Upload-Length)
    upload_offset INTEGER NOT NULL DEFAULT 0
                  CHECK (upload_offset >= 0 AND upload_offset <= upload_length), -- bytes stored durably so far
    metadata      TEXT,                             -- the raw Upload-Metadata header, echoed in HEAD
    file_name     TEXT    NOT NULL DEFAULT '',      -- the decoded "filename" metadata value
    content_type  TEXT    NOT NULL DEFAULT '',      -- the decoded "filetype" metadata value
    sha256        TEXT    CHECK (sha256 IS NULL OR upload_offset = upload_length), -- hex digest, set once finished
    expires_at    REAL    NOT NULL,                 -- 24 h after creation or the last bytes received (sliding)
    created_at    REAL    NOT NULL DEFAULT (unixepoch('subsec')),
    updated_at    REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
-- The GC's expired-upload query.
CREATE INDEX uploads_expires_idx ON uploads (expires_at);
-- The per-sender reservation and a sender's deletion.
CREATE INDEX uploads_owner_idx ON uploads (owner_id, expires_at);
