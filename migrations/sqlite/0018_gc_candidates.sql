-- The GC's two kinds of candidates, each found by a range scan of its own index that stops at
-- "now": an empty pass reads no live share, however many are live. The old index held every
-- share not yet purged, so an empty pass read them all.
CREATE INDEX shares_expiry_idx ON shares (expires_at) WHERE status = 'active';
CREATE INDEX shares_delivered_idx ON shares (consumed_at) WHERE status = 'consumed';
DROP INDEX shares_purgeable_idx;
