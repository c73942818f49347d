import { createHash } from 'node:crypto';
import type { SearchParameter } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { Database } from '../../core/database.js';
import type { SystemRepository } from '../../core/repository.js';
import { addSearchParameters } from '../../fhir/definitions.js';
import { SEARCH_INDEX_VERSION } from './reindex.js';

/** Most stored SearchParameters read at start (a handful of implementation guides hold a few hundred). */
export const MAX_STORED_SEARCH_PARAMETERS = 10_000;
const PAGE = 1000;

/**
 * Makes the SearchParameters held as shared content searchable (docs/profiles.md#searchparameters):
 * read at start, added beside the R4 ones (a code a type has already keeps its R4 parameter).
 * A project's own SearchParameters are not: search parameters are the same for every project.
 * When the ones added differ from those the index rows were written with (a package was loaded
 * since), every resource is re-indexed in the background by the pass that upgrades the index
 * (reindex.ts), started right after this. Returns how many were added.
 */
export async function useStoredSearchParameters(system: SystemRepository, db: Database, log: Logger): Promise<number> {
  const shared: SearchParameter[] = [];
  for (let offset = 0; offset < MAX_STORED_SEARCH_PARAMETERS; offset += PAGE) {
    const page = await system.search({ resourceType: 'SearchParameter', params: [['_count', String(PAGE)], ['_offset', String(offset)], ['_sort', '_id']] });
    shared.push(...(page.resources as SearchParameter[]).filter((sp) => !sp.meta?.project));
    if (page.resources.length < PAGE) break;
  }
  const added = addSearchParameters(shared);
  if (added.length > 0) log.info({ searchParameters: added.map((sp) => sp.url ?? sp.code) }, 'search: stored SearchParameters added');
  const digest = added.length === 0 ? null : createHash('sha256').update(added.map((sp) => `${sp.url}|${sp.version}|${sp.code}|${(sp.base ?? []).join(',')}|${sp.expression}`).sort().join('\n')).digest('hex');
  const changed = await db.transaction(async (tx) => {
    const row = (await tx.query<{ parameters: string | null }>('SELECT parameters FROM search_reindex WHERE id = 1 FOR UPDATE')).rows[0];
    if (!row || row.parameters === digest) return false;
    // From the start, at a version below the current one: reindex.ts then indexes every resource again.
    await tx.query('UPDATE search_reindex SET parameters = $1, version = LEAST(version, $2), after_type = NULL, after_id = NULL WHERE id = 1', [digest, SEARCH_INDEX_VERSION - 1]);
    return true;
  });
  if (changed) log.info('search: the stored SearchParameters changed; every resource is re-indexed in the background');
  return added.length;
}
