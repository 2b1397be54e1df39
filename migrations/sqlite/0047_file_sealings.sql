-- Plaintext files being encrypted in place (`watasu storage encrypt`), SQLite dialect: a row is
-- written before the sealed copy, and removed once the row of `files` points at the copy and the
-- plaintext is deleted. A run stopped in between finds it again: a copy the file was never
-- switched to is deleted, a plaintext the file was switched away from is deleted.
CREATE TABLE file_sealings (
    file_id     INTEGER PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE, -- the file being encrypted
    plain_key   TEXT    NOT NULL,                          -- its plaintext object's storage key
    sealed_key  TEXT,                                      -- the sealed copy's key, once written
    started_at  REAL    NOT NULL DEFAULT (unixepoch('subsec'))
);
