-- An event about one file of its share's handover names it by position, so a request's timeline
-- says which file the virus scan refused (the file's row, and its name, stay once its bytes go).
ALTER TABLE share_events ADD COLUMN file_position INTEGER; -- NULL: the event is about the share, not one file
