-- What the code step shows back to the browser that typed an address: the typed text (never the
-- registered address) and one status line for its next page view, so the step survives a reload
-- (the form posts answer 303) without the URL carrying anything.
ALTER TABLE otp_challenges ADD COLUMN typed_address TEXT NOT NULL DEFAULT ''; -- as typed on the email step, trimmed
ALTER TABLE otp_challenges ADD COLUMN notice TEXT; -- 'wrong', 'malformed', 'resent' or 'limited'; cleared when shown
