import type { Resource } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../../core/database.js';
import { FhirError } from '../../fhir/outcome.js';
import type { SearchIndex } from './search-index.js';

/**
 * Brings the search index of resources written by an older version up to date
 * (docs/rest.md#search-index-upgrades). The index rows are derived on write; when a version
 * indexes more (composite components, `_text`/`_content`, identifier types), the rows of
 * resources stored before it lack them until they are written again. At start-up the stored
 * index version is compared with `SEARCH_INDEX_VERSION`; when it is older, every current
 * resource is re-indexed in the background, a batch per transaction, in (type, id) order, the
 * position kept in `search_reindex` — so a stopped server resumes where it was, and several
 * nodes share the work (the batch holds the position row, so no two index the same batch).
 *
 * A resource that a write holds is skipped (`SKIP LOCKED`): that write indexes it itself, with
 * this version's rules. Searches run meanwhile answer from the rows there are.
 *
 * Stored data never stops the re-index: when a batch fails for anything but the database's state
 * (a 503: then it stops and resumes at the next start), its resources are indexed again one per
 * transaction, and one that still fails — content that does not parse, a value the extraction
 * cannot take — is skipped: logged, listed in `search_reindex_skipped`, counted, and passed.
 */

/** Raise when extraction indexes something new that older rows lack (2: composites, _text/_content, :of-type; 3: UCUM quantities in their canonical unit). */
export const SEARCH_INDEX_VERSION = 3;
/** Resources per transaction: short enough that a write waiting on the position row waits little. */
const BATCH = 200;
/** Longest `reason` kept for a skipped resource. */
const MAX_REASON = 500;

export interface ReindexProgress {
  /** Resources re-indexed by this process. */
  done: number;
  /** Resources this process could not index and skipped (search_reindex_skipped lists them). */
  skipped: number;
  /** True once the stored index is at `SEARCH_INDEX_VERSION`. */
  current: boolean;
}

interface Row {
  resource_type: string;
  id: string;
  content: string;
}

type Step = { finished: boolean; count: number; skipped: number };

/**
 * Re-indexes until the stored version is current or `stopped()` says so; yields to the event loop
 * between batches. Returns what this process did.
 */
export async function reindexIfOutdated(db: Database, index: SearchIndex, log: Logger, stopped: () => boolean): Promise<ReindexProgress> {
  const progress: ReindexProgress = { done: 0, skipped: 0, current: false };
  let announced = false;
  while (!stopped()) {
    let step: Step;
    try {
      step = await db.transaction((tx) => batch(tx, index, BATCH));
    } catch (err) {
      if (transient(err)) throw err;
      // Something in the batch cannot be indexed: the same batch again, one resource per transaction.
      step = { finished: false, count: 0, skipped: 0 };
      for (let i = 0; i < BATCH && !step.finished && !stopped(); i++) {
        const tried: { row?: Row } = {};
        const one = await db.transaction((tx) => batch(tx, index, 1, tried)).catch(async (e: unknown) => {
          if (transient(e) || !tried.row) throw e;
          const row = tried.row;
          return db.transaction((tx) => skip(tx, row, e, log));
        });
        step = { finished: one.finished, count: step.count + one.count, skipped: step.skipped + one.skipped };
      }
    }
    progress.done += step.count;
    progress.skipped += step.skipped;
    if (step.count + step.skipped > 0 && !announced) {
      announced = true;
      log.info({ version: SEARCH_INDEX_VERSION }, 'search index: re-indexing resources written by an older version');
    }
    if (step.finished) {
      progress.current = true;
      if (announced) log.info({ resources: progress.done, skipped: progress.skipped }, 'search index: up to date');
      break;
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return progress;
}

/** A 503: the database cannot serve now (stopped, frozen, busy, a timeout) — not the data's fault. */
function transient(err: unknown): boolean {
  return err instanceof FhirError && err.status === 503;
}

/** The position row, locked; undefined once the stored index is current. */
async function position(tx: Queryable): Promise<{ after_type: string | null; after_id: string | null } | undefined> {
  const state = await tx.query<{ version: number; after_type: string | null; after_id: string | null }>(
    'SELECT version, after_type, after_id FROM search_reindex WHERE id = 1 FOR UPDATE',
  );
  const at = state.rows[0];
  return at && at.version < SEARCH_INDEX_VERSION ? at : undefined;
}

async function nextRows(tx: Queryable, at: { after_type: string | null; after_id: string | null }, limit: number): Promise<Row[]> {
  const rows = await tx.query<Row>(
    `SELECT resource_type, id, content FROM resource
     WHERE NOT deleted AND version_id > 0 AND ($1::text IS NULL OR (resource_type, id) > ($1::text, $2::text))
     ORDER BY resource_type, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
    [at.after_type, at.after_id],
  );
  return rows.rows;
}

/** Moves the position past `last`, or marks the index current when there is none. */
async function advance(tx: Queryable, last: Row | undefined): Promise<void> {
  if (last) await tx.query('UPDATE search_reindex SET after_type = $1, after_id = $2 WHERE id = 1', [last.resource_type, last.id]);
  else await tx.query('UPDATE search_reindex SET version = $1, after_type = NULL, after_id = NULL WHERE id = 1', [SEARCH_INDEX_VERSION]);
}

/** Indexes the next `limit` resources and moves the position past them; `tried.row`: the one being indexed. */
async function batch(tx: Queryable, index: SearchIndex, limit: number, tried: { row?: Row } = {}): Promise<Step> {
  const at = await position(tx);
  if (!at) return { finished: true, count: 0, skipped: 0 };
  const rows = await nextRows(tx, at, limit);
  for (const row of rows) {
    tried.row = row;
    await index.index(tx, JSON.parse(row.content) as Resource);
  }
  const last = rows[rows.length - 1];
  await advance(tx, last);
  return { finished: !last, count: rows.length, skipped: 0 };
}

/** `row` failed alone (`err`): recorded as skipped, logged, and the position moved past it. */
async function skip(tx: Queryable, row: Row, err: unknown, log: Logger): Promise<Step> {
  if (!(await position(tx))) return { finished: true, count: 0, skipped: 0 };
  const reason = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, MAX_REASON);
  await tx.query(
    `INSERT INTO search_reindex_skipped (resource_type, id, version, reason) VALUES ($1, $2, $3, $4)
     ON CONFLICT (resource_type, id) DO UPDATE SET version = EXCLUDED.version, reason = EXCLUDED.reason, skipped_at = now()`,
    [row.resource_type, row.id, SEARCH_INDEX_VERSION, reason],
  );
  await advance(tx, row);
  log.warn({ resourceType: row.resource_type, id: row.id, reason }, `search index: skipped ${row.resource_type}/${row.id}, which cannot be indexed`);
  return { finished: false, count: 0, skipped: 1 };
}
