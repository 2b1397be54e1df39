-- How the team signs in, set by an admin: one row. `require_second_factor`: every password
-- sign-in needs a passkey or a TOTP code (accounts without one enrol at their next sign-in);
-- `passwords_allowed`: false when single sign-on is the only way in.
CREATE TABLE sign_in_policy (
    id                    INTEGER PRIMARY KEY CHECK (id = 1),
    require_second_factor boolean NOT NULL DEFAULT false,
    passwords_allowed     boolean NOT NULL DEFAULT true,
    updated_at            timestamptz,
    updated_by            BIGINT REFERENCES users (id) ON DELETE SET NULL
);
INSERT INTO sign_in_policy (id) VALUES (1);
