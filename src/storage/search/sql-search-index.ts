import type { Resource } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Queryable } from '../database.js';
import type { SearchIndex, SearchQuery, SearchResult, Visibility } from './search-index.js';

/**
 * Search over the `search_*` index tables.
 * TODO(search): extraction of the R4 SearchParameters and the parameter types are being built.
 */
export function createSearchIndex(): SearchIndex {
  return {
    async index(_tx: Queryable, _resource: Resource) {},
    async remove(_tx: Queryable, _type: string, _id: string) {},
    async search(q: Queryable, visibilityFrom: (first: number) => Visibility, query: SearchQuery): Promise<SearchResult> {
      let count = 20;
      let offset = 0;
      const ids: string[] = [];
      for (const [name, value] of query.params) {
        if (name === '_count') count = Math.min(Number(value), 1000);
        else if (name === '_offset') offset = Number(value);
        else if (name === '_id') ids.push(...value.split(','));
        else throw badRequest(`Unknown search parameter: ${name}`);
      }
      const visibility = visibilityFrom(2);
      const params: unknown[] = [query.resourceType, ...visibility.params];
      let where = `r.resource_type = $1 AND NOT r.deleted AND r.version_id > 0 AND ${visibility.sql}`;
      if (ids.length) {
        params.push(ids);
        where += ` AND r.id = ANY($${params.length})`;
      }
      const total = (await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource r WHERE ${where}`, params)).rows[0].n;
      const rows = await q.query<{ content: string }>(
        `SELECT content FROM resource r WHERE ${where} ORDER BY r.last_updated, r.id LIMIT ${count} OFFSET ${offset}`,
        params,
      );
      return { resources: rows.rows.map((r) => JSON.parse(r.content) as Resource), total, count, offset };
    },
  };
}
