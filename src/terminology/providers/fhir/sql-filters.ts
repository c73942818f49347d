import type { ValueSetComposeInclude, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { BindValues } from '../../../storage/bind-values.js';
import { msg } from '../../messages.js';
import type { CodeSystemInfo, Concept } from '../../types.js';
import { anchored, escapeRegex, filterOp, filterWords, textWordCandidate, invalidValueSet, isNotSelectableProperty, notSelectableCode } from '../filters.js';

/**
 * Compose includes as SQL — the SQL twin of index-filters.ts (same semantics, operator by
 * operator; the equivalence test compares both): each filter becomes a predicate over the
 * concept alias `c` (a row of `tx_concept`), so membership of given codes and expansions are
 * both one query whatever the size of the code system. Hierarchy operators walk the direct
 * edges of `tx_closure` (a recursive query, once per statement); `regex` runs in PostgreSQL
 * (`~`), whose automaton-based engine has no catastrophic backtracking, anchored to the whole
 * value as FHIR intends.
 */

/** Finds concepts of the code system by code (the SQL provider's own reads). */
export type FindConcepts = (codes: string[]) => Promise<Map<string, Concept>>;

/**
 * The SQL predicate of one filter for code system `cs`. `path` is the FHIRPath of the filter
 * (for the error of a broken filter).
 */
export async function filterPredicate(
  find: FindConcepts,
  cs: CodeSystemInfo,
  f: ValueSetComposeIncludeFilter,
  p: BindValues,
  path: string,
): Promise<string> {
  const op = filterOp(f) ?? '';
  const property = f.property ?? '';
  if (typeof f.value !== 'string' || f.value === '') throw invalidValueSet(msg.filterNoValue(cs.url, property, op), path, 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE');
  const value = f.value;
  const list = () => value.split(',').map((v) => v.trim()).filter(Boolean);
  const codeCol = cs.caseSensitive ? 'c.code' : 'c.code_lower';
  const norm = (v: string) => (cs.caseSensitive ? v : v.toLowerCase());
  const bool = () => {
    if (value !== 'true' && value !== 'false') throw invalidValueSet(msg.filterNotSupported(cs.url, property, `${op} ${value}`), path);
    return value === 'true';
  };
  const idOf = async (code: string) => (await find([code])).get(code)?.id;
  // Transitive: the proper descendants (or ancestors) of X, walked along the direct edges
  // (docs/terminology.md#hierarchy-storage) by an uncorrelated subquery, so evaluated once per
  // statement; X itself is left out even in a cycle. Direct edges (child-of): tx_closure, depth 1.
  const walk = (X: string, down: boolean) => {
    const [from, to] = down ? ['ancestor', 'descendant'] : ['descendant', 'ancestor'];
    const K = p.add(cs.key);
    return `(WITH RECURSIVE w(id) AS (SELECT h.${to} FROM tx_closure h WHERE h.cs_key = ${K} AND h.${from} = ${X}
      UNION SELECT h.${to} FROM tx_closure h JOIN w ON h.cs_key = ${K} AND h.${from} = w.id) SELECT id FROM w WHERE id <> ${X})`;
  };
  const below = (id: string, X: string) => `${id} IN ${walk(X, true)}`;

  if (property === 'concept' || property === 'code') {
    switch (op) {
      case '=':
        return `${codeCol} = ${p.add(norm(value))}`;
      case 'in':
        return `${codeCol} = ANY(${p.add(list().map(norm))}::text[])`;
      case 'not-in':
        return `NOT (${codeCol} = ANY(${p.add(list().map(norm))}::text[]))`;
      case 'regex':
        return `c.code ~ ${p.add(anchored(value, path))}`;
      case 'exists':
        return bool() ? 'true' : 'false';
    }
    const x = await idOf(value);
    if (x === undefined) return op === 'is-not-a' ? 'true' : 'false';
    const X = p.add(x);
    switch (op) {
      case 'is-a':
        return `(c.id = ${X} OR ${below('c.id', X)})`;
      case 'descendent-of':
        return below('c.id', X);
      case 'is-not-a':
        return `NOT (c.id = ${X} OR ${below('c.id', X)})`;
      case 'generalizes':
        return `(c.id = ${X} OR c.id IN ${walk(X, false)})`;
      case 'child-of':
        return `EXISTS (SELECT 1 FROM tx_closure h WHERE h.cs_key = c.cs_key AND h.descendant = c.id AND h.ancestor = ${X})`;
      case 'descendent-leaf':
        return `${below('c.id', X)} AND NOT EXISTS (SELECT 1 FROM tx_closure k WHERE k.cs_key = c.cs_key AND k.ancestor = c.id)`;
    }
    throw invalidValueSet(msg.filterNotSupported(cs.url, property, op), path);
  }

  if (property === 'inactive' && (op === '=' || op === 'exists')) return op === 'exists' ? (bool() ? 'true' : 'false') : `c.inactive = ${bool()}`;
  if (property === 'display') {
    switch (op) {
      case '=':
        return `c.display = ${p.add(value)}`;
      case 'regex':
        return `c.display ~ ${p.add(anchored(value, path))}`;
      case 'in':
        return `c.display = ANY(${p.add(list())}::text[])`;
      case 'not-in':
        return `NOT (c.display = ANY(${p.add(list())}::text[]))`;
      case 'exists':
        return bool() ? 'c.display IS NOT NULL' : 'c.display IS NULL';
    }
  }
  if ((property === 'parent' || property === 'child') && (op === '=' || op === 'in')) {
    const ids = [...(await find(op === '=' ? [value] : list())).values()].map((c) => c.id);
    const targets = p.add(ids);
    return property === 'parent'
      ? `EXISTS (SELECT 1 FROM tx_closure h WHERE h.cs_key = c.cs_key AND h.descendant = c.id AND h.depth = 1 AND h.ancestor = ANY(${targets}::int[]))`
      : `EXISTS (SELECT 1 FROM tx_closure h WHERE h.cs_key = c.cs_key AND h.ancestor = c.id AND h.depth = 1 AND h.descendant = ANY(${targets}::int[]))`;
  }

  // Any other property: the stored (typed) property values of the concept (a notSelectable
  // filter reads the property that states the flag).
  const P = p.add(isNotSelectableProperty(cs, property) ? notSelectableCode(cs, property) : property);
  const prop = (condition: string) =>
    `EXISTS (SELECT 1 FROM tx_concept_property q WHERE q.cs_key = c.cs_key AND q.concept = c.id AND q.code = ${P}${condition})`;
  switch (op) {
    case '=':
      return prop(` AND q.value = ${p.add(value)}`);
    case 'in':
      return prop(` AND q.value = ANY(${p.add(list())}::text[])`);
    case 'not-in':
      return `NOT ${prop(` AND q.value = ANY(${p.add(list())}::text[])`)}`;
    case 'regex':
      return prop(` AND q.value ~ ${p.add(anchored(value, path))}`);
    case 'exists':
      return bool() ? prop('') : `NOT ${prop('')}`;
    case 'is-a':
    case 'descendent-of': {
      // A property whose values are codes of this system (e.g. SNOMED attributes).
      const x = await idOf(value);
      if (x === undefined) return 'false';
      const X = p.add(x);
      const self = op === 'is-a' ? `v.id = ${X} OR ` : '';
      return `EXISTS (SELECT 1 FROM tx_concept_property q JOIN tx_concept v ON v.cs_key = q.cs_key AND v.code = q.value
        WHERE q.cs_key = c.cs_key AND q.concept = c.id AND q.code = ${P} AND (${self}${below('v.id', X)}))`;
    }
  }
  throw invalidValueSet(msg.filterNotSupported(cs.url, property, op), path);
}

/**
 * SQL conditions (over alias `c`) selecting the concepts of `cs` an include/exclude names:
 * its concept list, its filters (ANDed), and optionally only active concepts. No condition =
 * the whole system.
 */
export async function includeConditions(
  find: FindConcepts,
  cs: CodeSystemInfo,
  inc: ValueSetComposeInclude,
  path: string,
  p: BindValues,
  activeOnly: boolean,
): Promise<string[]> {
  const conditions: string[] = [];
  if (inc.concept) {
    const codes = inc.concept.map((c) => c.code).filter((c): c is string => typeof c === 'string');
    conditions.push(
      cs.caseSensitive ? `c.code = ANY(${p.add(codes)}::text[])` : `c.code_lower = ANY(${p.add(codes.map((c) => c.toLowerCase()))}::text[])`,
    );
  }
  for (const [j, f] of (inc.filter ?? []).entries()) conditions.push(await filterPredicate(find, cs, f, p, `${path}.filter[${j}]`));
  if (activeOnly) conditions.push('NOT c.inactive');
  return conditions;
}

/**
 * An expansion's text filter in SQL, the candidates of filters.ts#textFilterMatcher: every word
 * may match a word of the display or of a designation (textWordCandidate), or the code starts
 * with the text, ignoring case. The provider applies the matcher to the rows this selects.
 */
export function textCondition(text: string, p: BindValues): string {
  const words = filterWords(text);
  if (words.length === 0) return 'true';
  const byWords = words
    .map((w) => {
      const re = p.add(textWordCandidate(w));
      return `(c.display ~* ${re} OR EXISTS (SELECT 1 FROM tx_designation d WHERE d.cs_key = c.cs_key AND d.concept = c.id AND d.value ~* ${re}))`;
    })
    .join(' AND ');
  // or the code starts with the text (filters.ts#codeMatchesFilter)
  const start = p.add(`^${escapeRegex(text.trim())}`);
  return `((${byWords}) OR c.code ~* ${start})`;
}
