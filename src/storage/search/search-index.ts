import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../database.js';

/**
 * Which rows a caller may see: an SQL condition on the `resource` table (alias `r`), with its
 * placeholders numbered from the `firstParam` the caller asked for.
 */
export interface Visibility {
  /** e.g. `(r.project_id = $1 OR r.project_id IS NULL)`, or `true` for super admins. */
  sql: string;
  params: unknown[];
}

/** One search, as the REST layer received it (repeated names allowed, modifiers in the name). */
export interface SearchQuery {
  resourceType: string;
  /** Query pairs as given, e.g. [['name:exact','Eve'], ['_count','10']]; `_format`/`_pretty` removed. */
  params: Array<[string, string]>;
}

export interface SearchResult {
  resources: Resource[];
  /** Total number of matches (all pages). */
  total: number;
  /** Page size and offset used (count is 0 for `_summary=count`). */
  count: number;
  offset: number;
  /**
   * Search mode of each entry of `resources`, in order: `match`, or `include` for resources
   * added by `_include`/`_revinclude` (they follow the matches). Absent = all matches.
   */
  modes?: Array<'match' | 'include'>;
}

/**
 * The search index contract: maintained inside every write transaction, queried by search.
 * Implemented in this folder (extraction with FHIRPath from the R4 SearchParameters).
 */
export interface SearchIndex {
  /** Replaces the index rows of `resource` (called in the write transaction). */
  index(tx: Queryable, resource: Resource): Promise<void>;
  /** Removes the index rows of a resource (on delete). */
  remove(tx: Queryable, resourceType: string, id: string): Promise<void>;
  /** Runs a search; throws FhirError 400 for unknown parameters or bad values. */
  search(q: Queryable, visibility: (firstParam: number) => Visibility, query: SearchQuery): Promise<SearchResult>;
}
