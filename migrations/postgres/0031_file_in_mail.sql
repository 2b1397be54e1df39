-- The notification mail names the file and its size unless the sender switched that off for a
-- sensitive name; the link's landing page still names nothing before the code.
ALTER TABLE shares ADD COLUMN name_file_in_mail boolean NOT NULL DEFAULT true; -- the notification names the file and its size
