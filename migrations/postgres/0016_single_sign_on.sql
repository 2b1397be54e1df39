-- Single sign-on (OpenID Connect), PostgreSQL dialect.
-- The provider's subject (`sub`) an account was first signed in with: a later sign-in with the
-- same address and another subject is refused (an address reassigned at the provider).
ALTER TABLE users ADD COLUMN sso_subject TEXT CHECK (sso_subject IS NULL OR length(sso_subject) BETWEEN 1 AND 255);
CREATE UNIQUE INDEX users_sso_subject_idx ON users (sso_subject);

-- A sign-in started at the provider and not yet come back: single use, this session's only.
CREATE TABLE sso_logins (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, -- the browser that started it
    state_hash    TEXT   NOT NULL UNIQUE,            -- hex SHA-256 of the `state` sent to the provider
    nonce_hash    TEXT   NOT NULL,                   -- hex SHA-256 of the `nonce` the ID token must carry
    pkce_verifier BYTEA  NOT NULL,                   -- the PKCE verifier, sealed (AES-256-GCM, instance key)
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL               -- the answer is refused after this
);
CREATE INDEX sso_logins_session_idx ON sso_logins (session_id);
