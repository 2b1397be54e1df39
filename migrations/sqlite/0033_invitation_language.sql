-- The inviter chooses the invitation mail's language; a new link sent again uses the same one.
ALTER TABLE invitations ADD COLUMN lang TEXT NOT NULL DEFAULT 'ja' CHECK (lang IN ('ja', 'en')); -- language of the invitation mail
