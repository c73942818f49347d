-- SMART launch context (docs/auth.md#smart-launch). An EHR launch: a context {patient,
-- encounter} an authenticated caller stored under a random id (kept as its SHA-256), valid a few
-- minutes, bound to the caller's project.
CREATE TABLE auth_launch (
  id_hash text PRIMARY KEY,
  project_id text NOT NULL,
  membership_id text NOT NULL,
  patient text NOT NULL,
  encounter text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
-- A login's launch context: the project of the EHR launch it was bound to, and the patient
-- (and encounter) of that launch or of the patient chosen on the sign-in page.
ALTER TABLE auth_login ADD COLUMN launch_project text;
ALTER TABLE auth_login ADD COLUMN patient text;
ALTER TABLE auth_login ADD COLUMN encounter text;
-- A refresh keeps the launch context of the grant it continues.
ALTER TABLE auth_refresh_token ADD COLUMN patient text;
ALTER TABLE auth_refresh_token ADD COLUMN encounter text;
ALTER TABLE auth_refresh_token ADD COLUMN launched boolean NOT NULL DEFAULT false;
