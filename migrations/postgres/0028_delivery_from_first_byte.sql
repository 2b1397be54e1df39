-- The delivery grace runs from the first byte sent to the claiming browser, not from the claim: a
-- claim whose GET came late (an overloaded server, a browser put to sleep) must not find its file
-- gone before it got a byte. Until a byte goes out the grace waits for the share's expiry.
ALTER TABLE shares ADD COLUMN delivery_started_at timestamptz; -- when the first byte went to the claiming session; NULL until then
-- Shares consumed before this migration keep the rule they were claimed under.
UPDATE shares SET delivery_started_at = consumed_at WHERE status = 'consumed';
-- The GC's consumed candidates: one range search on when their grace started (or would).
CREATE INDEX shares_delivering_idx ON shares ((COALESCE(delivery_started_at, expires_at))) WHERE status = 'consumed';
DROP INDEX shares_delivered_idx;

-- The bytes each response sent to the claiming session, as ranges, so that a download resumed on
-- another instance (or after a crash) completes once they cover the file. A response writes its
-- range before the bytes go out (a little ahead of them), and the true end when it is over.
CREATE TABLE delivered_ranges (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    share_id   BIGINT NOT NULL REFERENCES shares (id) ON DELETE CASCADE,
    first_byte BIGINT NOT NULL, -- the response's first byte
    end_byte   BIGINT NOT NULL  -- one past the last byte sent (or about to be)
);
CREATE INDEX delivered_ranges_share_idx ON delivered_ranges (share_id);
-- A prefix already counted stays counted.
INSERT INTO delivered_ranges (share_id, first_byte, end_byte)
     SELECT id, 0, delivered_bytes FROM shares WHERE delivered_at IS NULL AND delivered_bytes > 0;
