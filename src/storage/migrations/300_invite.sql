-- Admin (invite) and set-password links. Migration numbering: 3xx admin/e-mail.
--
-- Uniqueness claims: the database, not application code, makes duplicate memberships
-- impossible (one User per e-mail and scope is already enforced by auth_user, 200_auth.sql).
-- A ResourceHook (src/admin/claims.ts) keeps these rows in step with every ProjectMembership
-- write, inside the write's own transaction, whatever the path (invite, REST, bootstrap).
-- Two concurrent writers of the same claim: the second waits for the first to commit and
-- then loses (INSERT ... ON CONFLICT DO NOTHING returns no row).

-- Per project: one membership per user (reference, e.g. `User/<id>`), per user e-mail (so a
-- project-scoped and a server-scoped user with the same e-mail cannot both be members) and
-- per external id.
CREATE TABLE membership_claim (
  membership_id text PRIMARY KEY,
  project_id text NOT NULL,
  user_ref text NOT NULL,
  email text,
  external_id text
);
CREATE UNIQUE INDEX membership_claim_user ON membership_claim (project_id, user_ref);
CREATE UNIQUE INDEX membership_claim_email ON membership_claim (project_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX membership_claim_external_id ON membership_claim (project_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX membership_claim_by_user ON membership_claim (user_ref);

-- Set-password links (`/setpassword/<id>/<secret>`): only a SHA-256 of the secret is kept.
CREATE TABLE password_set_request (
  id text PRIMARY KEY,
  user_id text NOT NULL,
  secret_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX password_set_request_user ON password_set_request (user_id);
