-- A challenge is created for every address submission, matched or not, so that nothing a session
-- sees afterwards depends on the match. Only a matched one has a code that was mailed; the others
-- hold a random MAC that no code can ever produce.
ALTER TABLE otp_challenges ADD COLUMN mailed BOOLEAN NOT NULL DEFAULT true; -- its code went to the registered address
