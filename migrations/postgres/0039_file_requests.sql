-- A file request is a share pointed the other way: the handover is made empty, its one share's
-- recipient is the uploader (who proves the mailbox as any recipient does), and the uploader's
-- files join the handover. `kind` tells the two apart wherever shares are listed or counted.
ALTER TABLE shares ADD COLUMN kind TEXT NOT NULL DEFAULT 'delivery' CHECK (kind IN ('delivery', 'request'));
-- The inbound handovers: a row here marks a handover as a request's, with the limits the sender
-- set (each within the instance's caps) and the note the uploader may add.
CREATE TABLE file_requests (
    handover_id     BIGINT PRIMARY KEY REFERENCES handovers (id) ON DELETE CASCADE,
    max_files       INTEGER NOT NULL CHECK (max_files > 0),        -- files the uploader may leave
    max_file_bytes  BIGINT  NOT NULL CHECK (max_file_bytes > 0),   -- the largest one file may be
    max_total_bytes BIGINT  NOT NULL CHECK (max_total_bytes > 0),  -- all files together
    uploader_note   TEXT    NOT NULL DEFAULT ''                    -- the uploader's words to the sender
);
