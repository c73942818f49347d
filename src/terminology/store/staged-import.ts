import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { CodeSystem, CodeSystemConcept } from '@medplum/fhirtypes';
import type { Database, Queryable } from '../../core/database.js';
import { BATCH_ROWS } from './bulk-insert.js';
import { CodeSystemRowBuilder, supplementDisplayLanguage } from '../providers/fhir/code-system-rows.js';
import { finishHierarchy, insertCodeSystemRow, insertRowBatch, removeIndexRows } from './code-system-store.js';
import { announceCodeSystemChange } from '../providers/fhir/index-cache.js';

/**
 * Atomic per-version imports of large code systems (docs/terminology.md#atomic-imports).
 *
 * The concepts are indexed under a staging row of `tx_code_system` that no reader can see
 * (readers resolve `scope IS NULL` rows only), in many short statements, so memory and
 * transactions stay small however large the system. Only when the index is complete is it
 * switched in, in ONE transaction with the write of the CodeSystem resource: the staging row
 * takes the resource id and becomes visible, and the previous index of that resource is set
 * aside as `discarded`. A killed import therefore leaves the previous state exactly (plus an
 * invisible staging row), and the next import removes such remains: discarded rows, and staging
 * rows whose process is gone (same host, process not running or restarted) or that have not
 * been touched for ten minutes (an import elsewhere that died).
 */

/** `scope` of a staging row: `staging <host> <pid> <process id>`. */
const STAGING = 'staging';
const DISCARDED = 'discarded';
/** Identifies this process run (a restarted process may get the same pid). */
const RUN = randomUUID();
const OWNER = `${STAGING} ${hostname()} ${process.pid} ${RUN}`;
/** A staging row untouched this long belongs to an import that died on another host. */
const QUIET_MINUTES = 10;

export class StagedCodeSystem {
  private readonly builder: CodeSystemRowBuilder;
  private lastTouch = Date.now();
  /**
   * The batch being written while the next one is read: on PostgreSQL the server stores one
   * while this process parses the next (on PGlite both share one thread anyway). At most one
   * batch is in flight, so memory stays bounded; its failure surfaces at the next flush.
   */
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: Database,
    readonly key: number,
    private readonly header: CodeSystem,
  ) {
    this.builder = new CodeSystemRowBuilder(header.property, supplementDisplayLanguage(header));
  }

  /** Starts a staged index for `header` (its `concept`s, if any, are ignored: `add` them). */
  static async begin(db: Database, header: CodeSystem, projectId: string | undefined): Promise<StagedCodeSystem> {
    await cleanUpImports(db);
    const key = await insertCodeSystemRow(
      db,
      { ...header, content: header.content === 'not-present' || !header.content ? 'complete' : header.content },
      { resourceId: `${STAGING}:${randomUUID()}`, projectId, scope: OWNER, lastUpdated: new Date().toISOString() },
      0,
    );
    return new StagedCodeSystem(db, key, header);
  }

  /** Concepts so far. */
  get size(): number {
    return this.builder.size;
  }

  /** Adds concepts (nested ones included); rows are written once a batch is full. */
  async add(concepts: CodeSystemConcept[]): Promise<void> {
    this.builder.add(concepts);
    if (this.builder.pendingRows >= BATCH_ROWS) await this.flush();
  }

  /**
   * Writes rows made elsewhere under this index (a release format read by its own loader, e.g.
   * RF2: docs/terminology.md#snomed-ct): `write` gets the database and the staged key, one batch
   * in flight as with `add`. Concepts added this way are counted by `complete`'s `hierarchy`.
   */
  async addRows(write: (q: Database, key: number) => Promise<void>): Promise<void> {
    await this.writing;
    const writing = write(this.db, this.key).then(() => this.touch());
    writing.catch(() => undefined); // observed by the next write, complete or abandon
    this.writing = writing;
  }

  /**
   * Writes the remaining rows and the hierarchy; `onProgress` gets concepts done of the total.
   * `hierarchy` gives the concept count and parent edges of rows written with `addRows`.
   */
  async complete(onProgress?: (done: number, total: number) => void, hierarchy?: { concepts: number; edges: Array<[number, number]> }): Promise<void> {
    await this.flush();
    await this.writing;
    const n = hierarchy?.concepts ?? this.builder.size;
    await finishHierarchy(this.db, this.key, n, hierarchy?.edges ?? this.builder.edges(), (done) => {
      onProgress?.(done, n);
      void this.touch();
    });
    await this.db.query('UPDATE tx_code_system SET concept_count = $2, last_updated = now() WHERE cs_key = $1', [this.key, n]);
  }

  /**
   * Makes the staged index the index of the CodeSystem `resource` (written by `write`, e.g. a
   * create or update through the system repository joined to the switch transaction): one
   * transaction. Returns what `write` returned.
   */
  async publish<T extends { id?: string; meta?: { lastUpdated?: string; project?: string } }>(
    write: (tx: Queryable) => Promise<T>,
  ): Promise<T> {
    const stored = await this.db.transaction(async (tx) => {
      const resource = await write(tx);
      // The resource hook has (re)indexed the resource's metadata; that row, and any earlier
      // index of the resource, are set aside for removal after the switch.
      await tx.query(`UPDATE tx_code_system SET resource_id = '${DISCARDED}:' || cs_key, scope = '${DISCARDED}' WHERE resource_id = $1`, [resource.id]);
      const switched = await tx.query(
        `UPDATE tx_code_system SET resource_id = $2, scope = NULL, project_id = $3, last_updated = $4 WHERE cs_key = $1 AND scope = $5`,
        [this.key, resource.id, resource.meta?.project ?? null, resource.meta?.lastUpdated ?? new Date().toISOString(), OWNER],
      );
      if (switched.rowCount !== 1) throw new Error(`the staged index ${this.key} of ${this.header.url} is gone`);
      await announceCodeSystemChange(tx, resource.id as string);
      return resource;
    });
    await cleanUpImports(this.db);
    return stored;
  }

  /** Removes the staged rows (an import that failed). */
  async abandon(): Promise<void> {
    await this.writing.catch(() => undefined); // no batch may land after the removal
    await removeStaged(this.db, this.key);
  }

  private async flush(): Promise<void> {
    const batch = this.builder.take();
    await this.writing;
    const writing = insertRowBatch(this.db, this.key, batch).then(() => this.touch());
    writing.catch(() => undefined); // observed by the next flush, complete or abandon
    this.writing = writing;
  }

  /** The heartbeat other hosts' clean-ups go by (at most every few seconds). */
  private async touch(): Promise<void> {
    if (Date.now() - this.lastTouch < 5000) return;
    this.lastTouch = Date.now();
    await this.db.query('UPDATE tx_code_system SET last_updated = now() WHERE cs_key = $1', [this.key]);
  }
}

/**
 * Removes what earlier imports left: discarded indexes, and staging rows whose import is over
 * (see the module comment). Returns the number of indexes removed.
 */
export async function cleanUpImports(db: Database): Promise<number> {
  const rows = await db.query<{ cs_key: number; scope: string; quiet: boolean }>(
    `SELECT cs_key, scope, last_updated < now() - interval '${QUIET_MINUTES} minutes' AS quiet FROM tx_code_system
     WHERE scope = '${DISCARDED}' OR scope LIKE '${STAGING} %'`,
  );
  let removed = 0;
  for (const r of rows.rows) {
    if (r.scope !== DISCARDED && !r.quiet && isLive(r.scope)) continue;
    await removeStaged(db, r.cs_key);
    removed++;
  }
  return removed;
}

function isLive(scope: string): boolean {
  const [, host, pid, run] = scope.split(' ');
  if (host !== hostname()) return true; // another host's import: only its silence tells
  if (Number(pid) === process.pid) return run === RUN;
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function removeStaged(db: Database, key: number): Promise<void> {
  await db.transaction(async (tx) => {
    await removeIndexRows(tx, key);
    await tx.query('DELETE FROM tx_code_system WHERE cs_key = $1', [key]);
  });
}
