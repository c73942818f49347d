-- Sign-in hardening (docs/auth.md): the redirect URI an authorization code was issued for (the
-- token request must repeat it, RFC 6749 §4.1.3); whether a membership is active
-- (`ProjectMembership.active: false` signs nobody in and stops its tokens); indexes for purging
-- expired logins and refresh tokens.
ALTER TABLE auth_login ADD COLUMN redirect_uri text;
ALTER TABLE auth_membership ADD COLUMN active boolean NOT NULL DEFAULT true;
UPDATE auth_membership m SET active = false
  FROM resource r
  WHERE r.resource_type = 'ProjectMembership' AND r.id = m.id AND NOT r.deleted
    AND (r.content::jsonb ->> 'active') = 'false';
CREATE INDEX auth_login_expires ON auth_login (expires_at);
CREATE INDEX auth_refresh_token_login ON auth_refresh_token (login_id);
CREATE INDEX auth_refresh_token_expires ON auth_refresh_token (expires_at);
