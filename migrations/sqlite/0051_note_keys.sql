-- Each secret note is sealed under a key of its own, kept here wrapped under a key derived from the
-- instance secret (see src/share/note.rs); the end of the note sets both columns to NULL in one
-- conditional UPDATE, so a copy of the note's ciphertext left anywhere (a backup taken later, a
-- freed page) opens with nothing. Notes sealed before keep `note_key` NULL and are opened the old
-- way (under the instance secret directly) until they end.
ALTER TABLE handovers ADD COLUMN note_key BLOB;             -- the note's own key, wrapped; NULL once the note ends
