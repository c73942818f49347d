import type { Resource } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { Database } from '../../core/database.js';
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
 */

/** Raise when extraction indexes something new that older rows lack (2: composites, _text/_content, :of-type; 3: UCUM quantities in their canonical unit). */
export const SEARCH_INDEX_VERSION = 3;
/** Resources per transaction: short enough that a write waiting on the position row waits little. */
const BATCH = 200;

export interface ReindexProgress {
  /** Resources re-indexed by this process. */
  done: number;
  /** True once the stored index is at `SEARCH_INDEX_VERSION`. */
  current: boolean;
}

/**
 * Re-indexes until the stored version is current or `stopped()` says so; yields to the event loop
 * between batches. Returns what this process did.
 */
export async function reindexIfOutdated(db: Database, index: SearchIndex, log: Logger, stopped: () => boolean): Promise<ReindexProgress> {
  const progress: ReindexProgress = { done: 0, current: false };
  let announced = false;
  while (!stopped()) {
    const step = await db.transaction(async (tx) => {
      const state = await tx.query<{ version: number; after_type: string | null; after_id: string | null }>(
        'SELECT version, after_type, after_id FROM search_reindex WHERE id = 1 FOR UPDATE',
      );
      const at = state.rows[0];
      if (!at || at.version >= SEARCH_INDEX_VERSION) return { finished: true, count: 0 };
      const rows = await tx.query<{ resource_type: string; id: string; content: string }>(
        `SELECT resource_type, id, content FROM resource
         WHERE NOT deleted AND version_id > 0 AND ($1::text IS NULL OR (resource_type, id) > ($1::text, $2::text))
         ORDER BY resource_type, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
        [at.after_type, at.after_id],
      );
      for (const row of rows.rows) await index.index(tx, JSON.parse(row.content) as Resource);
      const last = rows.rows[rows.rows.length - 1];
      if (last) {
        await tx.query('UPDATE search_reindex SET after_type = $1, after_id = $2 WHERE id = 1', [last.resource_type, last.id]);
      } else {
        await tx.query('UPDATE search_reindex SET version = $1, after_type = NULL, after_id = NULL WHERE id = 1', [SEARCH_INDEX_VERSION]);
      }
      return { finished: !last, count: rows.rows.length };
    });
    progress.done += step.count;
    if (step.count > 0 && !announced) {
      announced = true;
      log.info({ version: SEARCH_INDEX_VERSION }, 'search index: re-indexing resources written by an older version');
    }
    if (step.finished) {
      progress.current = true;
      if (announced) log.info({ resources: progress.done }, 'search index: up to date');
      break;
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return progress;
}
