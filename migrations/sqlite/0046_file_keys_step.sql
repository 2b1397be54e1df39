-- A deletion case destroys the keys of the account's encrypted files as its own verified step,
-- after the unfinished uploads and before the files' bytes. A case still open at upgrade gains it.
UPDATE deletion_steps SET position = position + 1
 WHERE position >= 10
   AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'file_keys')
   AND case_id IN (SELECT id FROM deletion_cases WHERE state NOT IN ('completed', 'failed'));
INSERT INTO deletion_steps (case_id, position, store, action)
SELECT case_id, 10, 'file_keys', 'delete' FROM deletion_steps
 WHERE store = 'stored_files'
   AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'file_keys')
   AND case_id IN (SELECT id FROM deletion_cases WHERE state NOT IN ('completed', 'failed'));
