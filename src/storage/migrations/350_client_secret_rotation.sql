-- Client secrets rotate and may expire (docs/auth.md#client-secrets): a client may hold several
-- secrets at once (the new one, and the previous one during a grace period), each with an
-- optional expiry.
ALTER TABLE auth_client_secret DROP CONSTRAINT auth_client_secret_pkey;
ALTER TABLE auth_client_secret ADD PRIMARY KEY (client_id, secret_hash);
ALTER TABLE auth_client_secret ADD COLUMN expires_at timestamptz;
