-- A handover of several files is delivered file by file or as one ZIP archive: each range a
-- response sent now names the file it belongs to (its position in the handover), so "download
-- completed" means every file reached the claiming session whole. Ranges recorded before were of
-- a share's one file, the first.
ALTER TABLE delivered_ranges ADD COLUMN position INTEGER NOT NULL DEFAULT 0; -- the file's files.position in the share's handover
