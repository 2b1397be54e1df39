-- "Send a new code" while the code still works mails that same code again instead of spending a
-- code request, so the code is kept sealed beside its MAC until it is used or set aside; the code
-- step says when it was sent again; a block of code requests is told to the sender once.
ALTER TABLE otp_challenges ADD COLUMN code_sealed BLOB;    -- AES-256-GCM of the mailed code (key derived from the secret key); NULL when not mailed, used or set aside
ALTER TABLE otp_challenges ADD COLUMN resent_at REAL;      -- when the same code was last sent again
ALTER TABLE otp_challenges ADD COLUMN blocked_until REAL;  -- end of the code-request block the sender's timeline was told of
-- The code step's old "limited" line is gone: a block is a step of its own now.
UPDATE otp_challenges SET notice = NULL WHERE notice = 'limited';
