-- Resumable uploads sent into the object store as the parts of one S3 multipart upload, SQLite
-- dialect: completing is then one request instead of a second copy of the file. Parts have a
-- fixed size per upload; what a PATCH leaves short of a part stays a piece (`upload_pieces`) until
-- the next PATCH fills the part. A NULL `multipart_id` keeps the pieces joined at completion (the
-- local store, sealed uploads, empty files).
ALTER TABLE uploads ADD COLUMN multipart_id TEXT;           -- the store's id of the upload's multipart upload
ALTER TABLE uploads ADD COLUMN part_bytes INTEGER;          -- the size of every part but the last
ALTER TABLE uploads ADD COLUMN digest_state BLOB;           -- SHA-256 and CRC-32 of the bytes sent as parts so far

-- The parts whose offset advance won, written in the same transaction as that advance: a part's
-- number is its place in the file (start_offset / part_bytes + 1), which the offset decides; S3
-- allows 10,000 parts, which `part_bytes` is chosen for.
CREATE TABLE upload_parts (
    upload_id    INTEGER NOT NULL REFERENCES uploads (id) ON DELETE CASCADE, -- the upload the part belongs to
    start_offset INTEGER NOT NULL CHECK (start_offset >= 0), -- where the part's bytes start in the file
    e_tag        TEXT    NOT NULL,                           -- what the store answered for it, needed to complete
    PRIMARY KEY (upload_id, start_offset)
);
