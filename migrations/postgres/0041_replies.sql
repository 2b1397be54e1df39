-- Replies: the sender lets a handover's recipients answer with files. A reply is a file request
-- made from the recipient's download page; it names the share it answers.
ALTER TABLE handovers ADD COLUMN allow_reply BOOLEAN NOT NULL DEFAULT FALSE;  -- the sender allows replies
-- The share a request answers (none for a request its sender made). One reply per share: the
-- unique index, which lets any number of requests answer none. A share deleted with its sender's
-- data leaves the reply a plain request.
ALTER TABLE file_requests ADD COLUMN reply_to_share_id BIGINT REFERENCES shares (id) ON DELETE SET NULL;
CREATE UNIQUE INDEX file_requests_reply_to ON file_requests (reply_to_share_id);
