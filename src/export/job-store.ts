import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '../core/auth.js';
import type { Database, Queryable } from '../core/database.js';
import { tooManyRequests } from '../fhir/outcome.js';
import type { ExportCursor, ExportPlan } from './plan.js';

/**
 * The export jobs and their files (migration 520_export.sql): the only SQL of src/export.
 * A job is claimed by one runner at a time with a lease (FOR UPDATE SKIP LOCKED); every write
 * of a runner names its lease, so a runner that lost it (its lease ran out and another node
 * took the job over, or the job was cancelled) writes nothing more.
 */
export interface ExportJob {
  id: string;
  project_id: string;
  owner: string;
  auth: AuthInfo;
  request_url: string;
  plan: ExportPlan;
  transaction_time: string | Date;
  state: 'queued' | 'running' | 'completed' | 'failed';
  cursor: ExportCursor;
  exported: string | number;
  attempts: number;
  error: string | null;
  expires_at: string | Date | null;
}

/** One file of a finished job, as the manifest lists it. */
export interface ExportFile {
  kind: 'output' | 'error';
  resource_type: string;
  count: number;
}

/** Who a job belongs to: the token's client application, else its user (docs/export.md#access). */
export function ownerOf(auth: AuthInfo): string {
  return auth.clientId ? `client:${auth.clientId}` : `user:${auth.userId ?? auth.membershipId ?? ''}`;
}

/**
 * Writes a new job, unless the caller already has `maxJobs` queued or running (429 with
 * `Retry-After`, docs/export.md#bounds). The count and the insert run under a lock on the
 * caller, so two kick-offs at once cannot both pass.
 */
export async function insertJob(
  db: Database,
  auth: AuthInfo,
  fields: { plan: ExportPlan; requestUrl: string },
  limits: { maxJobs: number; retryAfterSeconds: number },
): Promise<{ id: string; transactionTime: string }> {
  const owner = ownerOf(auth);
  const projectId = auth.projectId as string;
  return db.transaction(async (tx) => {
    await tx.query('SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtext($1))', [`export:${projectId}:${owner}`]);
    const active = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM export_job WHERE project_id = $1 AND owner = $2 AND state IN ('queued', 'running')`,
      [projectId, owner],
    );
    if ((active.rows[0]?.n ?? 0) >= limits.maxJobs) {
      throw tooManyRequests(
        limits.retryAfterSeconds,
        `Too many exports in progress: at most ${limits.maxJobs} per caller (LATTICE_EXPORT_MAX_JOBS); retry when one has finished`,
      );
    }
    const id = randomUUID();
    const res = await tx.query<{ t: string | Date }>(
      `INSERT INTO export_job (id, project_id, owner, auth, request_url, plan, transaction_time)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING transaction_time AS t`,
      // The clock that stamps meta.lastUpdated (repository.ts: this process's), not the database's.
      [id, projectId, owner, JSON.stringify(auth), fields.requestUrl, JSON.stringify(fields.plan), new Date().toISOString()],
    );
    return { id, transactionTime: isoOf(res.rows[0].t) };
  });
}

/** The job, as its owner sees it: undefined when absent, expired, of another project or another caller. */
export async function ownedJob(q: Queryable, id: string, auth: AuthInfo): Promise<ExportJob | undefined> {
  const res = await q.query<ExportJob>(
    `SELECT * FROM export_job WHERE id = $1 AND project_id = $2 AND owner = $3 AND (expires_at IS NULL OR expires_at > now())`,
    [id, auth.projectId ?? null, ownerOf(auth)],
  );
  return res.rows[0];
}

/** Cancels a job: it and its files are removed (a runner on it loses its lease at its next write). */
export async function deleteJob(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM export_job WHERE id = $1', [id]);
}

/**
 * Claims the oldest runnable job whose lease is free (never leased, or its node stopped
 * renewing it): one runner gets it, the others skip it.
 */
export async function claimJob(q: Queryable, runner: string, leaseMs: number): Promise<ExportJob | undefined> {
  const res = await q.query<ExportJob>(
    `UPDATE export_job SET state = 'running', lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond', attempts = attempts + 1
     WHERE id = (SELECT id FROM export_job WHERE state IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < now())
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [runner, leaseMs],
  );
  return res.rows[0];
}

/** Renews a lease; false when the runner no longer holds it. */
export async function renewLease(q: Queryable, id: string, runner: string, leaseMs: number): Promise<boolean> {
  const res = await q.query(
    `UPDATE export_job SET lease_until = now() + $3 * interval '1 millisecond' WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING id`,
    [id, runner, leaseMs],
  );
  return res.rows.length > 0;
}

/**
 * Stores one page: its NDJSON (when it has lines) and the cursor after it, in ONE short
 * transaction, so a job resumed after a crash starts exactly after the last stored page.
 * False (nothing written) when the runner lost its lease.
 */
export async function storePage(
  db: Database,
  job: { id: string; runner: string; leaseMs: number },
  cursor: ExportCursor,
  chunk: { kind: 'output' | 'error'; resourceType: string; lines: string[] } | undefined,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const owned = await tx.query(
      `UPDATE export_job SET cursor = $3, exported = exported + $4, lease_until = now() + $5 * interval '1 millisecond'
       WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING id`,
      [job.id, job.runner, JSON.stringify(cursor), chunk?.kind === 'output' ? chunk.lines.length : 0, job.leaseMs],
    );
    if (owned.rows.length === 0) return false;
    if (chunk && chunk.lines.length > 0) {
      await tx.query(
        `INSERT INTO export_chunk (job_id, kind, resource_type, seq, lines, data)
         SELECT $1, $2, $3, COALESCE(max(seq), 0) + 1, $4, $5 FROM export_chunk WHERE job_id = $1 AND kind = $2 AND resource_type = $3`,
        [job.id, chunk.kind, chunk.resourceType, chunk.lines.length, `${chunk.lines.join('\n')}\n`],
      );
    }
    return true;
  });
}

/** Ends a job (completed, or failed with `error`); its files expire `expirySeconds` later. */
export async function finishJob(q: Queryable, job: { id: string; runner: string }, state: 'completed' | 'failed', error: string | undefined, expirySeconds: number): Promise<void> {
  await q.query(
    `UPDATE export_job SET state = $3, error = $4, lease_owner = NULL, lease_until = NULL, finished_at = now(),
       expires_at = now() + $5 * interval '1 second'
     WHERE id = $1 AND lease_owner = $2`,
    [job.id, job.runner, state, error ?? null, expirySeconds],
  );
}

/** Gives a job back after an error of this node (its lease ends now: the next claim retries it). */
export async function releaseJob(q: Queryable, job: { id: string; runner: string }, error: string): Promise<void> {
  await q.query(`UPDATE export_job SET lease_owner = NULL, lease_until = NULL, error = $3 WHERE id = $1 AND lease_owner = $2`, [job.id, job.runner, error]);
}

/** The files of a job: one per output type and the error file, with their line counts. */
export async function jobFiles(q: Queryable, id: string): Promise<ExportFile[]> {
  const res = await q.query<ExportFile>(
    `SELECT kind, resource_type, sum(lines)::int AS count FROM export_chunk WHERE job_id = $1 GROUP BY kind, resource_type ORDER BY kind DESC, resource_type`,
    [id],
  );
  return res.rows;
}

/** The pieces of one file in order, a few at a time (a download never holds a whole file). */
export async function* fileChunks(q: Queryable, id: string, kind: 'output' | 'error', resourceType: string): AsyncGenerator<string> {
  let after = 0;
  for (;;) {
    const res = await q.query<{ seq: number; data: string }>(
      `SELECT seq, data FROM export_chunk WHERE job_id = $1 AND kind = $2 AND resource_type = $3 AND seq > $4 ORDER BY seq LIMIT 8`,
      [id, kind, resourceType, after],
    );
    for (const row of res.rows) yield row.data;
    if (res.rows.length < 8) return;
    after = res.rows[res.rows.length - 1].seq;
  }
}

/**
 * Milliseconds until the next thing an idle runner must do by itself: a lease running out (a
 * job whose node stopped renewing it) or files expiring; undefined when there is neither.
 */
export async function nextDueInMs(q: Queryable): Promise<number | undefined> {
  const res = await q.query<{ ms: number | string | null }>(
    `SELECT extract(epoch FROM least(min(lease_until) FILTER (WHERE state IN ('queued', 'running')), min(expires_at)) - now()) * 1000 AS ms FROM export_job`,
  );
  const ms = res.rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, Math.ceil(Number(ms)));
}

/** Removes jobs whose files have expired (their chunks go with them); returns how many. */
export async function deleteExpired(q: Queryable): Promise<number> {
  const res = await q.query('DELETE FROM export_job WHERE expires_at < now() RETURNING id');
  return res.rows.length;
}

export function isoOf(value: string | Date): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
