-- A handover may carry a secret note instead of files: sealed (see src/row_seal.rs), shown to the
-- claiming session, and destroyed (set to NULL) when no share of the handover needs it any more.
-- `has_note` outlives the sealed text, so the dashboard still says "read" afterwards.
ALTER TABLE handovers ADD COLUMN has_note BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE handovers ADD COLUMN note_sealed BYTEA;
