import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../../core/database.js';
import type { ExportPageQuery, ResourceRepository, SearchQuery, SearchResult } from '../../core/repository.js';
import type { SearchTerminology } from '../../core/search.js';
import type { Scope } from '../../core/scope.js';
import type { IndexRows } from './index-rows.js';

/**
 * The search index contract: maintained inside every write transaction, queried by search.
 * Implemented in this folder (extraction with FHIRPath from the R4 SearchParameters).
 */
export interface SearchIndex {
  /** Replaces the index rows of `resource` (called in the write transaction). */
  index(tx: Queryable, resource: Resource): Promise<void>;
  /**
   * The CTEs that write the index rows of `resource` inside the statement that writes the
   * resource itself (one round trip per write, docs/rest.md#cost-of-a-request); see
   * index-writer.ts `indexCtes` for `params` and the options.
   */
  indexCtes(resource: Resource, params: unknown[], options: { replace: boolean; guard?: string }): string[];
  /**
   * The CTEs that write the index rows of many new resources in one statement (index-writer.ts
   * `manyIndexCtes`); `rows[i]`, when given, are the rows of `resources[i]` extracted ahead (`extract`).
   */
  manyIndexCtes(resources: Resource[], params: unknown[], rows?: Array<IndexRows | undefined>): string[];
  /** The index rows of `resource` (what a write of it stores), for a caller that computes them ahead. */
  extract(resource: Resource): IndexRows;
  /** Removes the index rows of a resource (on delete). */
  remove(tx: Queryable, resourceType: string, id: string): Promise<void>;
  /**
   * Runs a search; throws FhirError 400 for unknown parameters or bad values. `repo` is the
   * caller's repository: the terminology modifiers resolve code systems and value sets with it.
   * `caughtUp` (Database.caughtUp for this request) lets a kept answer be given (search-cache.ts):
   * absent inside a transaction, whose own writes the cache knows nothing of.
   */
  search(q: Queryable, scope: Scope, query: SearchQuery, repo?: ResourceRepository, caughtUp?: () => Promise<void>): Promise<SearchResult>;
  /**
   * One page of a bulk export (query/export-page.ts): the ids read and the resources (JSON text)
   * that had a version at the transaction time; 400 for a `_typeFilter` search cannot run.
   */
  exportPage(q: Queryable, scope: Scope, query: ExportPageQuery, repo?: ResourceRepository): Promise<{ rows: Array<{ id: string; content: string }>; last?: string; done: boolean }>;
  /** The terminology engine the token modifiers ask (wired once the terminology feature exists). */
  useTerminology(terminology: SearchTerminology): void;
}
