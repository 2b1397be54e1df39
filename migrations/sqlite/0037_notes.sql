-- A handover may carry a secret note instead of files: sealed (see src/row_seal.rs), shown to the
-- claiming session, and destroyed (set to NULL) when no share of the handover needs it any more.
-- `has_note` outlives the sealed text, so the dashboard still says "read" afterwards.
ALTER TABLE handovers ADD COLUMN has_note INTEGER NOT NULL DEFAULT 0 CHECK (has_note IN (0, 1));
ALTER TABLE handovers ADD COLUMN note_sealed BLOB;
