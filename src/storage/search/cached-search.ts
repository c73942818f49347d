import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../../core/database.js';
import type { ResourceRepository, SearchQuery, SearchResult } from '../../core/repository.js';
import type { SearchTerminology } from '../../core/search.js';
import type { Interaction, Scope } from '../../core/scope.js';
import { heard } from '../change-feed.js';
import { resourceTable } from '../scope.js';
import type { SearchLimits } from './query/limits.js';
import { answerSearch, buildSearch, type SearchAnswer, type SearchStatements } from './query/run-search.js';
import type { KeptAnswer, SearchCache } from './search-cache.js';

/**
 * A search through the search answer cache (search-cache.ts, docs/rest.md#search-answer-cache).
 * The search is built first (its SQL and values: the caller's visibility, the criteria, and what
 * the terminology modifiers resolved to); asked again word for word by a caller with the same
 * visibility while nothing was written, its kept answer is given without a statement. `caughtUp`
 * (Database.caughtUp from when the request arrived) is awaited before a kept answer is used on
 * PostgreSQL.
 */
export async function cachedSearch(
  cache: SearchCache,
  caughtUp: () => Promise<void>,
  q: Queryable,
  scope: Scope,
  query: SearchQuery,
  limits: SearchLimits,
  engines: { terminology?: SearchTerminology; repo?: ResourceRepository },
): Promise<SearchResult> {
  const built = await buildSearch(q, scope, query, limits, engines);
  // `_total=estimate` is the planner's figure, which moves when statistics are refreshed (no write).
  if (built.controls.total === 'estimate') return (await answerSearch(q, scope, query, limits, built)).result;
  const key = answerKey(scope, query, built);
  let kept = cache.get(key);
  if (kept && cache.shared) {
    // Every commit that finished before the request arrived has then been heard (and has dropped
    // the answer). Not listening: the database is read; a barrier without an answer: 503.
    kept = (await heard(caughtUp())) ? cache.get(key) : undefined;
  }
  if (kept) return fromKept(kept);
  const readAt = cache.generation();
  const answer = await answerSearch(q, scope, query, limits, built);
  cache.set(key, toKept(answer), readAt);
  return answer.result;
}

/**
 * What decides a search's answer besides the stored rows: the caller's visibility (its tenancy
 * condition and access rights, which also judge included resources), the search as asked (its
 * controls: `_count`, `_offset`, `_total`, `_cursor`, `_include`…), and the page's SQL and values
 * (with what the terminology modifiers resolved to). The limits are the search index's own (one
 * cache per index).
 */
function answerKey(scope: Scope, query: SearchQuery, built: SearchStatements): string {
  return JSON.stringify([visibilityKey(scope), query.resourceType, query.types ?? null, query.compartment ?? null, query.params, built.page.sql, built.page.values]);
}

const visibilityKeys = new WeakMap<Scope, string>();

/**
 * The caller's visibility as the SQL builders see it: the tenancy predicate with its values and
 * the access layers of reads and searches (storage/scope.ts). Two callers with the same key build
 * the same SQL for every statement of a search, includes included.
 */
function visibilityKey(scope: Scope): string {
  let key = visibilityKeys.get(scope);
  if (key === undefined) {
    const layers = (interaction: Interaction) =>
      scope.accessLayers(interaction)?.map((layer) => layer.map((g) => ({ ...g, interactions: [...g.interactions].sort() })));
    key = JSON.stringify([scope.predicate(resourceTable('r'), 1), layers('r'), layers('s')]);
    visibilityKeys.set(scope, key);
  }
  return key;
}

function toKept(answer: SearchAnswer): KeptAnswer {
  const { resources: _resources, modes, ...rest } = answer.result;
  return { ...rest, ...(modes ? { modes: [...modes] } : {}), json: `[${answer.texts().join(',')}]` };
}

/** A fresh copy of a kept answer: objects no other request holds. */
function fromKept(kept: KeptAnswer): SearchResult {
  const { json, modes, ...rest } = kept;
  return { ...rest, resources: JSON.parse(json) as Resource[], ...(modes ? { modes: [...modes] } : {}) };
}
