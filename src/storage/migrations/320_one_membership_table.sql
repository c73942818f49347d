-- One owner per fact: the membership mirror login reads (auth_membership) also carries the
-- uniqueness constraints the invite relies on; the separate membership_claim table is gone.
-- Kept in step by the ProjectMembership/User hooks (src/auth/memberships.ts) inside each
-- write's transaction, whatever the path (invite, REST, bootstrap, client applications).
-- Per project: one membership per member, per member e-mail (so a project-scoped and a
-- server-scoped user with the same e-mail cannot both be members) and per external id.
ALTER TABLE auth_membership ADD COLUMN email text;
ALTER TABLE auth_membership ADD COLUMN external_id text;
UPDATE auth_membership m SET email = c.email, external_id = c.external_id
  FROM membership_claim c WHERE c.membership_id = m.id;
UPDATE auth_membership m SET email = u.email
  FROM auth_user u WHERE m.member_type = 'User' AND u.user_id = m.member_id AND m.email IS NULL;
CREATE UNIQUE INDEX auth_membership_member_once ON auth_membership (project_id, member_type, member_id);
CREATE UNIQUE INDEX auth_membership_email_once ON auth_membership (project_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX auth_membership_external_id_once ON auth_membership (project_id, external_id) WHERE external_id IS NOT NULL;
DROP TABLE membership_claim;
