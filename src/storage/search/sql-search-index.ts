import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../../core/database.js';
import type { ExportPageQuery, ResourceRepository, SearchQuery, SearchResult } from '../../core/repository.js';
import type { SearchTerminology } from '../../core/search.js';
import type { Scope } from '../../core/scope.js';
import { FhirError, issue } from '../../fhir/outcome.js';
import { extractRows } from './extract.js';
import type { IndexRows } from './index-rows.js';
import { indexCtes, manyIndexCtes, removeRows, replaceRows } from './index-writer.js';
import { DEFAULT_SEARCH_LIMITS, type SearchLimits } from './query/limits.js';
import { runSearch } from './query/run-search.js';
import { cachedSearch } from './cached-search.js';
import type { SearchCache } from './search-cache.js';
import { exportPage } from './query/export-page.js';
import type { SearchIndex } from './search-index.js';
import { StatisticsSchedule } from './statistics.js';

/**
 * Search over the `search_*` index tables: values are extracted with FHIRPath from the R4
 * SearchParameters on every write (extract.ts), stored in one statement (index-writer.ts),
 * and searched with one SQL query per search (query/); a search asked again while nothing was
 * written is answered from `cache` (search-cache.ts) when the caller allows it (`caughtUp`).
 */
export function createSearchIndex(limits: SearchLimits = DEFAULT_SEARCH_LIMITS, cache?: SearchCache): SearchIndex {
  const statistics = new StatisticsSchedule();
  let terminology: SearchTerminology | undefined;
  return {
    async index(tx: Queryable, resource: Resource): Promise<void> {
      await replaceRows(tx, resource.resourceType, resource.id as string, extractOrRefuse(resource), resource.meta?.lastUpdated);
      statistics.wrote();
    },
    indexCtes(resource: Resource, params: unknown[], options: { replace: boolean; guard?: string }): string[] {
      const parts = indexCtes(extractOrRefuse(resource), params, { ...options, lastUpdated: resource.meta?.lastUpdated });
      statistics.wrote();
      return parts;
    },
    extract: extractOrRefuse,
    manyIndexCtes(resources: Resource[], params: unknown[], rows?: Array<IndexRows | undefined>): string[] {
      const parts = manyIndexCtes(
        resources.map((r, i) => ({ resourceType: r.resourceType, id: r.id as string, lastUpdated: r.meta?.lastUpdated, rows: rows?.[i] ?? extractOrRefuse(r) })),
        params,
      );
      statistics.wrote(resources.length);
      return parts;
    },
    async remove(tx: Queryable, resourceType: string, id: string): Promise<void> {
      await removeRows(tx, resourceType, id);
      statistics.wrote();
    },
    async search(q: Queryable, scope: Scope, query: SearchQuery, repo?: ResourceRepository, caughtUp?: () => Promise<void>): Promise<SearchResult> {
      await statistics.refreshIfDue(q);
      if (cache && caughtUp) return cachedSearch(cache, caughtUp, q, scope, query, limits, { terminology, repo });
      return runSearch(q, scope, query, limits, { terminology, repo });
    },
    exportPage(q: Queryable, scope: Scope, query: ExportPageQuery, repo?: ResourceRepository) {
      return exportPage(q, scope, query, limits, { terminology, repo });
    },
    useTerminology(t: SearchTerminology): void {
      terminology = t;
    },
  };
}

/**
 * The index rows of a resource, or a 400 when they cannot be computed (docs/rest.md#search-index-upgrades):
 * a write is never stored without its index rows — the extraction runs before the write's
 * statement, in its transaction — and the caller learns why rather than getting a 500.
 */
function extractOrRefuse(resource: Resource): IndexRows {
  try {
    return extractRows(resource);
  } catch (err) {
    if (err instanceof FhirError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new FhirError(400, [issue('processing', `${resource.resourceType} cannot be indexed for search (${reason}); it was not stored`)]);
  }
}
