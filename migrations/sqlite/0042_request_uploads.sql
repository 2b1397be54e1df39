-- A file request's uploader sends files through tus too. Such an upload belongs to the request
-- (its share), not to a signed-in sender: `owner_id` is then the request's sender (whose deletion
-- takes it along), and neither the sender's own endpoint nor their reservation ever counts or
-- shows it. The row goes with its share; bytes left without a row are the leftover sweep's.
ALTER TABLE uploads ADD COLUMN request_share_id INTEGER REFERENCES shares (id) ON DELETE CASCADE;
-- A request's unfinished uploads, counted against its limits.
CREATE INDEX uploads_request_idx ON uploads (request_share_id, expires_at) WHERE request_share_id IS NOT NULL;
