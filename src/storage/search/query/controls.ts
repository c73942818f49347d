import { MAX_SEARCH_COUNT, SEARCH_CONTROL_PARAMETERS } from '../../../core/repository.js';
import { badRequest } from '../../../fhir/outcome.js';
import { searchParameter, tableFor, type IndexTable } from '../parameters.js';
import { TEXT_PARAMETERS, checkKnown, splitModifier } from './filters.js';
import type { SqlParams } from './sql-params.js';

/** Result parameters: they shape the answer instead of selecting resources (the search contract's). */
export const CONTROL_PARAMETERS = SEARCH_CONTROL_PARAMETERS;

export const DEFAULT_COUNT = 20;
const MAX_COUNT = MAX_SEARCH_COUNT;
const SUMMARY_VALUES = new Set(['true', 'false', 'text', 'data', 'count']);

/** The result parameters of one search, validated. */
export interface Controls {
  count: number;
  offset: number;
  /** `_sort` keys in order, e.g. [{code: 'birthdate', descending: true}]. */
  sort: Array<{ code: string; descending: boolean }>;
  summaryCount: boolean;
  /** `_cursor`: where the page starts in keyset order (keyset.ts), as given. */
  cursor?: string;
  /**
   * `_total` (docs/rest.md#result-parameters): `none` = no total is answered, so none is
   * counted; `estimate` = the planner's estimate when the page is not the last; `accurate`
   * (and absent) = an exact COUNT when the page is not the last.
   */
  total?: 'none' | 'estimate' | 'accurate';
}

/**
 * Reads the result parameters (the last one wins when repeated). `_summary`, `_elements` and
 * `_total` chooses how a total beyond the page is found (runSearch); the REST layer shapes the output.
 * `_include`/`_revinclude` are read by includes.ts.
 */
export function parseControls(type: string, params: Array<[string, string]>): Controls {
  const controls: Controls = { count: DEFAULT_COUNT, offset: 0, sort: [], summaryCount: false };
  for (const [name, value] of params) {
    const [code, modifier] = splitModifier(name);
    // `_include:iterate` is checked with the directive (includes.ts); `_sort:asc=a`/`_sort:desc=a`
    // is the DSTU2 form (fhir.js writes it): one key each, appended in the order given.
    if (code === '_sort' && (modifier === 'asc' || modifier === 'desc')) {
      if (value !== '') controls.sort = [...controls.sort, ...parseSort(type, modifier === 'desc' ? `-${value.replace(/^-/, '')}` : value)];
      continue;
    }
    if (modifier !== undefined && code !== '_include' && code !== '_revinclude') {
      throw badRequest(`Unsupported modifier ':${modifier}' for ${code}`);
    }
    if (value === '') continue; // an empty parameter is ignored, as for filters
    switch (code) {
      case '_count':
        controls.count = Math.min(wholeNumber(code, value), MAX_COUNT);
        break;
      case '_offset':
        controls.offset = wholeNumber(code, value);
        break;
      case '_cursor':
        controls.cursor = value;
        break;
      case '_sort':
        controls.sort = parseSort(type, value);
        break;
      case '_summary':
        if (!SUMMARY_VALUES.has(value)) throw badRequest(`Invalid value '${value}' for _summary`);
        controls.summaryCount = value === 'count';
        break;
      case '_elements':
        for (const element of value.split(',').map((e) => e.trim()).filter(Boolean)) {
          if (!/^[A-Za-z][A-Za-z0-9]*(\[x\])?$/.test(element)) throw badRequest(`Invalid value '${value}' for _elements`);
        }
        break;
      case '_total':
        if (value !== 'none' && value !== 'estimate' && value !== 'accurate') throw badRequest(`Invalid value '${value}' for _total`);
        controls.total = value;
        break;
    }
  }
  return controls;
}

function wholeNumber(name: string, value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw badRequest(`Invalid value '${value}' for ${name}`);
  return Number(value);
}

function parseSort(type: string, value: string): Controls['sort'] {
  return value
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key.length > 0)
    .map((key) => {
      const descending = key.startsWith('-');
      const code = descending ? key.slice(1) : key;
      checkKnown(type, code);
      if (code !== '_id' && code !== '_lastUpdated' && (TEXT_PARAMETERS.has(code) || !tableFor(searchParameter(type, code)!))) {
        throw badRequest(`Cannot sort by search parameter ${code}`);
      }
      return { code, descending };
    });
}

/**
 * ORDER BY for the `_sort` keys: columns for `_id`/`_lastUpdated`, else the smallest (ascending)
 * or largest (descending) indexed value of the parameter (sortKeySql). Resources without a value
 * come last; the id breaks ties in the direction of the last key, so an index on
 * (…, key, id) yields the order read forwards or backwards (docs/rest.md#query-plans).
 */
export function orderBySql(p: SqlParams, type: string, sort: Controls['sort']): string {
  if (sort.length === 0) return 'r.last_updated ASC, r.id ASC';
  const keys = sort.map(({ code, descending }) => {
    const direction = descending ? 'DESC' : 'ASC';
    if (code === '_id') return `r.id ${direction}`;
    if (code === '_lastUpdated') return `r.last_updated ${direction}`;
    const key = sortKey(type, code, descending);
    const extra = key.condition === undefined ? '' : ` AND ${key.condition('s')}`;
    return (
      `(SELECT ${descending ? 'max' : 'min'}(s.${key.column}) FROM search_${key.table} s WHERE s.resource_type = ${p.add(type)} AND s.id = r.id` +
      ` AND s.param = ${p.add(code)}${extra}) ${direction} NULLS LAST`
    );
  });
  return [...keys, `r.id ${sort[sort.length - 1].descending ? 'DESC' : 'ASC'}`].join(', ');
}

/**
 * Where the value `_sort` orders by is stored: its table, column (a date sorts ascending by its
 * start, descending by its end) and the condition that picks the sorting rows (a HumanName's one
 * "family given" row; a quantity as written, not its canonical copy).
 */
export function sortKey(type: string, code: string, descending: boolean): { table: IndexTable; column: string; condition?: (alias: string) => string } {
  const table = tableFor(searchParameter(type, code)!)!;
  const column = { string: 'value', token: 'code', reference: 'reference', date: descending ? 'high' : 'low', number: 'value', quantity: 'value', uri: 'value' }[table];
  const condition = table === 'string' ? (a: string) => `${a}.sort_key` : table === 'quantity' ? (a: string) => `NOT ${a}.canonical` : undefined;
  return { table, column, condition };
}
