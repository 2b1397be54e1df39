-- The pieces of a resumable upload kept in an object store: one row per PATCH round whose offset
-- advance won, written in the same transaction as that advance, so a racing writer's piece is
-- never recorded. Completing streams them in offset order into the final object. The local store
-- appends to one file and records none.
CREATE TABLE upload_pieces (
    upload_id    INTEGER NOT NULL REFERENCES uploads (id) ON DELETE CASCADE, -- the upload the bytes belong to
    start_offset INTEGER NOT NULL CHECK (start_offset >= 0), -- where the piece's bytes start in the file
    piece        TEXT    NOT NULL,                           -- the piece's object name under ".part-<key>/"
    PRIMARY KEY (upload_id, start_offset)
);
