-- Personal API tokens, PostgreSQL dialect: a sender's scripts and other systems sign in with one
-- as a bearer token. Only the public lookup id and a hash of the whole token are kept, never the
-- token.
CREATE TABLE api_tokens (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE, -- whose: the token acts as them
    name         TEXT   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64), -- the owner's label ("CI deploy")
    lookup_id    TEXT   NOT NULL UNIQUE,  -- the public part after `wts_`: finds the row, proves nothing
    token_hash   TEXT   NOT NULL,         -- hex SHA-256 of the whole token
    scopes       TEXT   NOT NULL,         -- what it may do, space-separated codes (`shares:read shares:write`)
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,             -- NULL: never
    last_used_at timestamptz,             -- at most a minute behind the latest use
    revoked_at   timestamptz,             -- set once: a revoked token never works again
    revoked_by   BIGINT REFERENCES users (id) ON DELETE SET NULL -- the owner, an admin, or NULL (the host's command)
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);
