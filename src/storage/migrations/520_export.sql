-- Bulk Data export (src/export, docs/export.md). Migrations 52x belong to the export feature.
-- A job is written by the kick-off and run by one node's runner at a time: a runner claims it
-- with FOR UPDATE SKIP LOCKED and leases it (`lease_until`, renewed by every page and a
-- heartbeat); a job whose lease ran out (its node died) is claimed again and resumes from
-- `cursor`, which every page commits together with the NDJSON it wrote.
CREATE TABLE export_job (
  id text PRIMARY KEY,
  project_id text NOT NULL,
  -- who started it: the status and the files are served to this caller only
  owner text NOT NULL,
  -- the caller's identity (AuthInfo) at kick-off: the job reads with these rights
  auth jsonb NOT NULL,
  request_url text NOT NULL,
  -- what to export (types, _since, _typeFilter, patients, _elements)
  plan jsonb NOT NULL,
  transaction_time timestamptz NOT NULL,
  state text NOT NULL DEFAULT 'queued',   -- queued | running | completed | failed
  -- where the next page starts: {"type": <index in plan.types>, "after": <last id> | null}
  cursor jsonb NOT NULL DEFAULT '{"type": 0}',
  exported bigint NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_until timestamptz,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  expires_at timestamptz
);
CREATE INDEX export_job_runnable ON export_job (created_at) WHERE state IN ('queued', 'running');
CREATE INDEX export_job_owner ON export_job (owner) WHERE state IN ('queued', 'running');
CREATE INDEX export_job_expiry ON export_job (expires_at);

-- The files of a job, in pieces: one row per page (kind 'output': resources of `resource_type`;
-- 'error': OperationOutcomes), read back in `seq` order. Removed with the job.
CREATE TABLE export_chunk (
  job_id text NOT NULL REFERENCES export_job (id) ON DELETE CASCADE,
  kind text NOT NULL,
  resource_type text NOT NULL,
  seq integer NOT NULL,
  lines integer NOT NULL,
  data text NOT NULL,
  PRIMARY KEY (job_id, kind, resource_type, seq)
);
