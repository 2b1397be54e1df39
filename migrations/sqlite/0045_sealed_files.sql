-- Stored files sealed at rest (sqlite dialect): each file encrypted under its own data key, the key
-- kept here only wrapped under a key derived from WATASU_FILE_KEY. Destroying the wrapped key makes
-- every copy of the bytes unreadable (backups, object versions, remapped disk blocks).
ALTER TABLE files ADD COLUMN sealing TEXT NOT NULL DEFAULT 'plaintext'
    CHECK (sealing IN ('plaintext', 'sealed-v1'));  -- how the bytes are stored; older files stay plaintext
ALTER TABLE files ADD COLUMN wrapped_key BLOB;          -- the data key, AES-256-GCM under the file key; NULL once destroyed
ALTER TABLE files ADD COLUMN file_key_id TEXT;        -- which file key wraps it (for a rotation); NULL when plaintext
ALTER TABLE files ADD COLUMN key_destroyed_at REAL;     -- when the wrapped key was destroyed, before the bytes went
-- A resumable upload's bytes are still stored plaintext while it runs; its sealing is recorded the
-- same way once it is.
ALTER TABLE uploads ADD COLUMN sealing TEXT NOT NULL DEFAULT 'plaintext'
    CHECK (sealing IN ('plaintext', 'sealed-v1'));
ALTER TABLE uploads ADD COLUMN wrapped_key BLOB;
ALTER TABLE uploads ADD COLUMN file_key_id TEXT;
