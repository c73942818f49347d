-- A login (and every access token that descends from it) can be revoked: by a password change,
-- by logout. Checked per request from a cache kept fresh by NOTIFY (src/auth/access-state.ts).
ALTER TABLE auth_login ADD COLUMN revoked_at timestamptz;
CREATE INDEX auth_login_user ON auth_login (user_id);
