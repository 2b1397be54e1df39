-- A deletion case names every store a sender's data lives in as a step of its own, searched and
-- verified by looking again: API tokens, passkeys and second factors, the notes, the file requests,
-- the webhook messages and endpoints (before, the account row took them along by cascade and the
-- evidence did not say so). A case still open at upgrade takes the new run order and gains the new
-- steps; a finished case keeps the evidence it has. The same statements in both dialects.
UPDATE deletion_steps
   SET position = CASE store
        WHEN 'sessions' THEN 0
        WHEN 'api_tokens' THEN 1
        WHEN 'sign_in_methods' THEN 2
        WHEN 'invitations' THEN 3
        WHEN 'codes' THEN 4
        WHEN 'grants' THEN 5
        WHEN 'delivered_mail' THEN 6
        WHEN 'mail_outbox' THEN 7
        WHEN 'share_events' THEN 8
        WHEN 'rate_limits' THEN 9
        WHEN 'shares' THEN 10
        WHEN 'notes' THEN 11
        WHEN 'file_requests' THEN 12
        WHEN 'webhook_messages' THEN 13
        WHEN 'webhook_endpoints' THEN 14
        WHEN 'uploads' THEN 15
        WHEN 'file_keys' THEN 16
        WHEN 'stored_files' THEN 17
        WHEN 'file_records' THEN 18
        WHEN 'handovers' THEN 19
        WHEN 'logs' THEN 20
        WHEN 'backups' THEN 21
        WHEN 'account' THEN 22
        ELSE position END
 WHERE case_id IN (SELECT id FROM deletion_cases WHERE state NOT IN ('completed', 'failed'));
INSERT INTO deletion_steps (case_id, position, store, action)
SELECT c.id, n.position, n.store, 'delete'
  FROM deletion_cases c,
       (SELECT 1 AS position, 'api_tokens' AS store
        UNION ALL SELECT 2, 'sign_in_methods'
        UNION ALL SELECT 11, 'notes'
        UNION ALL SELECT 12, 'file_requests'
        UNION ALL SELECT 13, 'webhook_messages'
        UNION ALL SELECT 14, 'webhook_endpoints') n
 WHERE c.state NOT IN ('completed', 'failed')
   AND NOT EXISTS (SELECT 1 FROM deletion_steps s WHERE s.case_id = c.id AND s.store = n.store);
