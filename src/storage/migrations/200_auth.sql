-- Authentication state (src/auth). Everything a second API node needs lives here: signing
-- keys, logins and authorization codes, refresh tokens, client secrets, login throttling.
-- User/ProjectMembership themselves are resources; auth_user and auth_membership mirror the
-- fields login needs, maintained by resource hooks inside the resource's write transaction.

-- JWT signing keys. The partial unique index allows one active key, so two processes that
-- start together on an empty database both end up with the same key (the loser's INSERT
-- does nothing).
CREATE TABLE auth_signing_key (
  kid text PRIMARY KEY,
  alg text NOT NULL,
  private_jwk text NOT NULL,
  public_jwk text NOT NULL,
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX auth_signing_key_one_active ON auth_signing_key (active) WHERE active;

-- Login lookup for User resources. scope = project id of a project-scoped user, '' for a
-- server-scoped one; an e-mail is unique within its scope.
CREATE TABLE auth_user (
  user_id text PRIMARY KEY,
  email text NOT NULL,
  scope text NOT NULL
);
CREATE UNIQUE INDEX auth_user_email ON auth_user (email, scope);

-- Membership lookup (who may act in which project, with which profile).
CREATE TABLE auth_membership (
  id text PRIMARY KEY,
  project_id text NOT NULL,
  member_type text NOT NULL,   -- 'User' | 'ClientApplication'
  member_id text NOT NULL,
  profile text,                -- e.g. 'Practitioner/123'
  admin boolean NOT NULL DEFAULT false
);
CREATE INDEX auth_membership_member ON auth_membership (member_type, member_id);

-- Client secrets (SHA-256 of a 256-bit random secret; the secret is shown once).
CREATE TABLE auth_client_secret (
  client_id text PRIMARY KEY,
  secret_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A password login: created by /auth/login, gets a membership (directly or via
-- /auth/profile) and a single-use authorization code (stored hashed).
CREATE TABLE auth_login (
  id text PRIMARY KEY,
  user_id text NOT NULL,
  client_id text,
  scope text,
  nonce text,
  code_challenge text,
  code_challenge_method text,
  membership_id text,
  code_hash text UNIQUE,
  code_expires_at timestamptz,
  code_used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

-- Refresh tokens (hashed). Each use rotates: the used token is marked, a new one issued in
-- the same family; presenting a used token again revokes the whole family.
CREATE TABLE auth_refresh_token (
  token_hash text PRIMARY KEY,
  family_id text NOT NULL,
  login_id text,
  membership_id text NOT NULL,
  client_id text,
  scope text,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_refresh_token_family ON auth_refresh_token (family_id);

-- Failed password logins, per account ('email:<e-mail>') and per client address
-- ('ip:<address>'), shared by all API nodes for throttling.
CREATE TABLE auth_login_failure (
  key text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_login_failure_key ON auth_login_failure (key, at);
