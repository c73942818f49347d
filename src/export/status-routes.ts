import type { AppRequest, AppResult, AppRoute } from '../core/app-route.js';
import type { Database } from '../core/database.js';
import { FhirError, informational, issue, notFound } from '../fhir/outcome.js';
import { deleteJob, fileChunks, isoOf, jobFiles, ownedJob, type ExportJob } from './job-store.js';
import { ERROR_FILE, NDJSON, outputFile } from './plan.js';

/** Where a job's status is polled, under the FHIR base (the kick-off's `Content-Location`). */
export const STATUS_PATH = '/fhir/R4/$export-status';
/** Where a finished job's files are downloaded. */
export const FILE_PATH = '/fhir/R4/$export-file';

/** Seconds a client is asked to wait between polls (`Retry-After` of a 202). */
const POLL_SECONDS = 2;

const JOB_NOT_FOUND = 'Export job not found (unknown, expired or cancelled)';

/**
 * The status and file endpoints of the asynchronous pattern (docs/export.md#status): they
 * answer only the caller that started the job (its user, or its client application), within
 * its project; to anyone else the job does not exist (404). Files are served only with the
 * token (`requiresAccessToken: true`).
 */
export function exportRoutes(db: Database, publicUrl: () => string): AppRoute[] {
  const job = async (req: AppRequest): Promise<ExportJob> => {
    const found = await ownedJob(db, req.params.id, req.ctx.auth);
    if (!found) throw notFound(JOB_NOT_FOUND);
    return found;
  };
  return [
    { method: 'GET', url: `${STATUS_PATH}/:id`, auth: true, handler: async (req) => status(db, await job(req), publicUrl()) },
    {
      method: 'DELETE',
      url: `${STATUS_PATH}/:id`,
      auth: true,
      handler: async (req) => {
        await deleteJob(db, (await job(req)).id);
        return { status: 202, body: informational('Export cancelled; its files are removed'), contentType: 'application/fhir+json; charset=utf-8' };
      },
    },
    {
      method: 'GET',
      url: `${FILE_PATH}/:id/:file`,
      auth: true,
      handler: async (req) => {
        const found = await job(req);
        if (found.state !== 'completed') throw notFound(JOB_NOT_FOUND);
        const name = req.params.file;
        const [kind, type] = name === ERROR_FILE ? (['error', 'OperationOutcome'] as const) : (['output', name.replace(/\.ndjson$/, '')] as const);
        const files = await jobFiles(db, found.id);
        if (!files.some((f) => f.kind === kind && f.resource_type === type)) throw notFound(`No file ${name} in this export`);
        return { status: 200, raw: { contentType: NDJSON, stream: fileChunks(db, found.id, kind, type) } };
      },
    },
  ];
}

/** 202 with progress while the job runs, 200 with the manifest when it is done, 500 when it failed. */
async function status(db: Database, job: ExportJob, publicUrl: string): Promise<AppResult> {
  if (job.state === 'queued' || job.state === 'running') {
    const plan = job.plan;
    const type = plan.types[job.cursor.type];
    const progress = job.state === 'queued' ? 'queued' : `${job.exported} resources exported; type ${Math.min(job.cursor.type + 1, plan.types.length)} of ${plan.types.length}${type ? ` (${type})` : ''}`;
    return { status: 202, headers: { 'X-Progress': progress, 'Retry-After': String(POLL_SECONDS) } };
  }
  if (job.state === 'failed') throw new FhirError(500, [issue('exception', `Export failed: ${job.error ?? 'unknown error'}`)]);
  const files = await jobFiles(db, job.id);
  const url = (name: string) => `${publicUrl}${FILE_PATH}/${job.id}/${name}`;
  const manifest = {
    transactionTime: isoOf(job.transaction_time),
    request: job.request_url,
    requiresAccessToken: true,
    output: files.filter((f) => f.kind === 'output').map((f) => ({ type: f.resource_type, url: url(outputFile(f.resource_type)), count: f.count })),
    error: files.filter((f) => f.kind === 'error').map((f) => ({ type: 'OperationOutcome', url: url(ERROR_FILE), count: f.count })),
  };
  const headers: Record<string, string> = job.expires_at ? { Expires: new Date(job.expires_at).toUTCString() } : {};
  return { status: 200, headers, body: manifest };
}
