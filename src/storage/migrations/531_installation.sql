-- One random value per database, made when the database is first migrated: the ids of the
-- first-start resources (the super-admin project, user, profile and membership) are derived
-- from it, so every installation's super-admin project has its own id (src/auth/bootstrap.ts).
CREATE TABLE IF NOT EXISTS installation (
  singleton integer PRIMARY KEY CHECK (singleton = 1),
  salt text NOT NULL
);
INSERT INTO installation (singleton, salt) VALUES (1, gen_random_uuid()::text) ON CONFLICT DO NOTHING;
