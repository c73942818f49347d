-- The membership mirror carries the membership's access policy (docs/auth.md#access-policies):
-- the authenticator reads it with the membership on every request (cached, auth/access-state.ts).
ALTER TABLE auth_membership ADD COLUMN access_policy text;
UPDATE auth_membership m SET access_policy = split_part(r.content::jsonb->'accessPolicy'->>'reference', '/', 2)
  FROM resource r
 WHERE r.resource_type = 'ProjectMembership' AND r.id = m.id AND NOT r.deleted
   AND r.content::jsonb->'accessPolicy'->>'reference' LIKE 'AccessPolicy/%';
