-- When the GC closed a share it is about to empty, SQLite dialect. The collector closes a share
-- (one conditional UPDATE that still requires it to be collectable) before it reads the files to
-- delete; an upload into a request, a request's finish and a claim all require it to be unclosed.
-- The end and a commit then exclude each other: a commit before the close is among the files the
-- collector reads, a finish before it leaves nothing to close, and nothing commits after it.
ALTER TABLE shares ADD COLUMN closed_at REAL; -- set once by the GC; from then on the share takes nothing
