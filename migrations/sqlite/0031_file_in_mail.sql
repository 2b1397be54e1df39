-- The notification mail names the file and its size unless the sender switched that off for a
-- sensitive name; the link's landing page still names nothing before the code.
ALTER TABLE shares ADD COLUMN name_file_in_mail INTEGER NOT NULL DEFAULT 1 CHECK (name_file_in_mail IN (0, 1)); -- the notification names the file and its size
