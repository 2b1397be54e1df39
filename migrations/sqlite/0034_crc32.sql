-- The CRC-32 of each stored file, taken in the same pass as its SHA-256, so that a bundle's ZIP
-- archive is laid out without reading its files again. NULL for files stored before.
ALTER TABLE files ADD COLUMN crc32 BIGINT;   -- the content's CRC-32 (IEEE), 0 to 2^32 - 1
ALTER TABLE uploads ADD COLUMN crc32 BIGINT; -- recorded with sha256 once the upload is complete
