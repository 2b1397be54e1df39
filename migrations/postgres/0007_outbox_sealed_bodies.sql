-- Stored mail bodies are now sealed by the application (AES-256-GCM under a key derived from the
-- instance secret; the body starts with the bytes 00 'ws1'), and a row that becomes 'dead' loses
-- its body at once: nothing queues a dead mail again, and its body would keep a live share link.
-- Bodies of mails still waiting are sealed by the application at start-up; dead ones are emptied
-- here.
UPDATE mail_outbox SET message = ''::bytea WHERE status = 'dead';
