-- The id of the deployment's file key (never the key): recorded by the first instance that starts
-- with WATASU_ENCRYPT_FILES, moved by a finished `watasu keys rotate`. An instance whose file key
-- is another one refuses to start, before it stores a file the others could not open (see
-- src/storage/sealed/key_record.rs). One row at most.
CREATE TABLE file_key_record (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    key_id TEXT NOT NULL                        -- FileKeys::id of the key every instance must hold
);
