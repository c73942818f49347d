import type { SearchParameter } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { SystemRepository } from '../../core/repository.js';
import { addSearchParameters } from '../../fhir/definitions.js';

/** Most stored SearchParameters read at start (a handful of implementation guides hold a few hundred). */
export const MAX_STORED_SEARCH_PARAMETERS = 10_000;
const PAGE = 1000;

/**
 * Makes the SearchParameters held as shared content searchable (docs/profiles.md#searchparameters):
 * read at start, added beside the R4 ones (a code a type has already keeps its R4 parameter).
 * A project's own SearchParameters are not: search parameters are the same for every project.
 * Returns how many were added.
 */
export async function useStoredSearchParameters(system: SystemRepository, log: Logger): Promise<number> {
  const shared: SearchParameter[] = [];
  for (let offset = 0; offset < MAX_STORED_SEARCH_PARAMETERS; offset += PAGE) {
    const page = await system.search({ resourceType: 'SearchParameter', params: [['_count', String(PAGE)], ['_offset', String(offset)], ['_sort', '_id']] });
    shared.push(...(page.resources as SearchParameter[]).filter((sp) => !sp.meta?.project));
    if (page.resources.length < PAGE) break;
  }
  const added = addSearchParameters(shared);
  if (added.length > 0) log.info({ searchParameters: added.map((sp) => sp.url ?? sp.code) }, 'search: stored SearchParameters added');
  return added.length;
}
