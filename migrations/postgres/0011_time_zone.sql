-- The time zone a sender reads times in, as an IANA name (`Asia/Tokyo`, `Europe/Paris`). NULL:
-- none chosen, so their pages follow the language (Japan time in Japanese, UTC in English).
ALTER TABLE users ADD COLUMN time_zone TEXT CHECK (time_zone IS NULL OR length(time_zone) BETWEEN 1 AND 64);
