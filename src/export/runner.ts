import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { Resource } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { AuthInfo } from '../core/auth.js';
import { BackgroundLoop } from '../core/background-loop.js';
import type { Database } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import { keepElements } from '../fhir/elements.js';
import { FhirError, outcome, issue } from '../fhir/outcome.js';
import { claimJob, deleteExpired, finishJob, isoOf, nextDueInMs, releaseJob, renewLease, storePage, type ExportJob } from './job-store.js';
import type { ExportCursor, ExportPlan } from './plan.js';

type Settings = Config['bulkExport'];

/**
 * The export runner of one node (docs/export.md#how-a-job-runs): claims one job at a time,
 * pages through each type in `id` order (one statement a page, one short transaction to store
 * it with the cursor), renews its lease with every page and a heartbeat, and stops writing the
 * moment it loses the lease (cancelled, or taken over after it stalled). A job left by a node
 * that died is claimed again once its lease runs out and resumes after its last stored page;
 * past `maxAttempts` claims it fails with that said in its status. Any number of nodes run one.
 */
export class ExportRunner extends BackgroundLoop {
  readonly id = randomUUID();

  constructor(
    private readonly db: Database,
    private readonly repository: (auth: AuthInfo) => ResourceRepository,
    private readonly settings: Settings,
    private readonly log: Logger,
  ) {
    super(settings.pollMs);
  }

  protected async pass(): Promise<number> {
    // A lease that ran out is claimable a moment after its instant (clocks of one database).
    return (await this.drain()) + 10;
  }

  protected onError(err: unknown): void {
    this.log.error({ err }, 'export runner: looking for jobs failed');
  }

  /**
   * Runs jobs until none is runnable; removes expired ones first. Returns when to look again:
   * when a lease runs out or files expire, and at the latest after `pollMs` (a kick-off on any
   * node wakes the runner sooner; the poll covers a wake-up that was missed).
   */
  async drain(): Promise<number> {
    await deleteExpired(this.db);
    while (!this.stopped) {
      const job = await claimJob(this.db, this.id, this.settings.leaseMs);
      if (!job) break;
      await this.runJob(job);
    }
    return Math.min(this.settings.pollMs, (await nextDueInMs(this.db)) ?? Infinity);
  }

  private async runJob(job: ExportJob): Promise<void> {
    const lease = { id: job.id, runner: this.id, leaseMs: this.settings.leaseMs };
    const log = this.log.child({ exportJob: job.id, attempt: job.attempts });
    if (job.attempts > this.settings.maxAttempts) {
      // The status tells the client; the cause (a node that died, a database error) is for the log.
      const why = `The export was interrupted ${job.attempts - 1} times (LATTICE_EXPORT_MAX_ATTEMPTS) and was given up`;
      log.warn({ lastError: job.error }, why);
      await finishJob(this.db, lease, 'failed', why, this.settings.expirySeconds);
      return;
    }
    let lost = false;
    const heartbeat = setInterval(() => {
      renewLease(this.db, job.id, this.id, this.settings.leaseMs).then(
        (held) => (lost ||= !held),
        (err: unknown) => log.warn({ err }, 'export: lease renewal failed'),
      );
    }, Math.max(100, Math.floor(this.settings.leaseMs / 3)));
    heartbeat.unref();
    try {
      const done = await this.pages(job, lease, () => lost || this.stopped);
      if (done) {
        await finishJob(this.db, lease, 'completed', undefined, this.settings.expirySeconds);
        log.info('export completed');
      }
    } catch (err) {
      // This node's trouble (the database went away, a bug): the job goes back, and the next
      // claim (here or on another node) resumes it after its last stored page.
      log.error({ err }, 'export: page failed; the job will be resumed');
      await releaseJob(this.db, lease, err instanceof Error ? err.message : String(err)).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Exports from the job's cursor to the end; false when it stopped early (lease lost, node stopping). */
  private async pages(job: ExportJob, lease: { id: string; runner: string; leaseMs: number }, halted: () => boolean): Promise<boolean> {
    const plan = job.plan;
    const repo = this.repository(job.auth);
    const asOf = isoOf(job.transaction_time);
    let cursor: ExportCursor = { ...job.cursor };
    while (cursor.type < plan.types.length) {
      // Between pages the event loop serves requests: an embedded database answers in
      // microtasks only, and a loop of them would hold off every socket until the job ends.
      await setImmediate();
      if (halted()) return false;
      const type = plan.types[cursor.type];
      let next: ExportCursor;
      let chunk: Parameters<typeof storePage>[3];
      try {
        const page = await repo.exportPage({
          resourceType: type,
          count: this.settings.pageSize,
          asOf,
          ...(cursor.after !== undefined ? { after: cursor.after } : {}),
          ...(plan.since !== undefined ? { since: plan.since } : {}),
          ...(plan.typeFilters[type] ? { filters: plan.typeFilters[type] } : {}),
          ...(plan.patients !== undefined ? { patients: plan.patients } : {}),
        });
        next = page.done || page.last === undefined ? { type: cursor.type + 1 } : { type: cursor.type, after: page.last };
        chunk = { kind: 'output', resourceType: type, lines: shape(page.lines, type, plan.elements) };
      } catch (err) {
        // A type the job cannot export (its access changed, a filter no longer runs): said in
        // the error file, and the export goes on with the next type.
        if (!(err instanceof FhirError)) throw err;
        const text = `${type} was not exported: ${err.message}`;
        next = { type: cursor.type + 1 };
        chunk = { kind: 'error', resourceType: 'OperationOutcome', lines: [JSON.stringify(outcome([issue('processing', text)]))] };
      }
      if (halted() || !(await storePage(this.db, lease, next, chunk))) return false;
      cursor = next;
    }
    return true;
  }
}

/** `_elements`: each line keeps only the named top-level elements of its type (tagged SUBSETTED). */
function shape(lines: string[], type: string, elements: ExportPlan['elements']): string[] {
  const wanted = elements ? new Set([...(elements['*'] ?? []), ...(elements[type] ?? [])]) : undefined;
  if (!wanted || wanted.size === 0) return lines;
  return lines.map((line) => JSON.stringify(keepElements(JSON.parse(line) as Resource, wanted)));
}
