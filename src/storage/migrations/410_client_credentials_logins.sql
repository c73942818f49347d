-- A client_credentials token descends from a login of its own (no user), so that
-- POST /oauth2/logout can revoke it like a person's token (docs/auth.md#revocation).
ALTER TABLE auth_login ALTER COLUMN user_id DROP NOT NULL;
