-- An optional virus scan by clamd (WATASU_CLAMD): each file subject to it is held until clamd has
-- answered for it, and released (clean, or too large under the `release` policy) or refused
-- (infected, too large under `refuse`, or clamd never answered within the retry limit). A file
-- not subject to scanning keeps scan_state NULL and is released as before.
ALTER TABLE files ADD COLUMN scan_state TEXT
    CHECK (scan_state IN ('pending', 'clean', 'infected', 'too_large', 'refused'));  -- NULL: not scanned, released
ALTER TABLE files ADD COLUMN scan_attempts INTEGER NOT NULL DEFAULT 0 CHECK (scan_attempts >= 0); -- scans clamd did not answer so far
ALTER TABLE files ADD COLUMN scan_next_at TIMESTAMPTZ; -- a pending file is not scanned before this (backoff)
ALTER TABLE files ADD COLUMN scan_finding TEXT;        -- clamd's signature name for an infected file; the last failure's class while pending
ALTER TABLE files ADD COLUMN scanned_at TIMESTAMPTZ;   -- when the scan reached its final state
ALTER TABLE files ADD COLUMN scan_told_at TIMESTAMPTZ; -- when the sender was mailed that this file was refused (once, whichever instance)
-- The worker's "due pending files" query reads only pending rows.
CREATE INDEX files_scan_due_idx ON files (scan_next_at, id) WHERE scan_state = 'pending';
