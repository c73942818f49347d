import type { ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { FhirError } from '../../../fhir/outcome.js';
import { findConcept, findConcepts } from './index-provider.js';
import { txIssueOutcome } from '../../issues.js';
import { msg } from '../../messages.js';
import type { CodeSystemInfo, TermContext } from '../../types.js';

/**
 * `ValueSet.compose.include.filter` as SQL — the reference implementation; the engine evaluates
 * filters over the in-memory index (filter-match.ts, same semantics): each filter becomes a predicate over the concept
 * alias `c` (a row of `tx_concept`), so membership of given codes and expansions are both one
 * query whatever the size of the code system. Hierarchy operators walk the direct edges of
 * `tx_closure` (a recursive query, once per statement);
 * `regex` runs in PostgreSQL (`~`), whose automaton-based engine has no catastrophic
 * backtracking, anchored to the whole value as FHIR intends.
 */

/** R5 filter operators reach R4 as this extension on `_op` (e.g. `child-of`). */
const FILTER_OP_EXT = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.compose.include.filter.op';
/** Longer patterns are refused outright (the engine's cost grows with the pattern). */
const MAX_REGEX_LENGTH = 500;

/** Collects positional parameters while a statement is built. */
export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The operator of a filter, from `op` or the R5 extension. */
export function filterOp(f: ValueSetComposeIncludeFilter): string | undefined {
  if (f.op) return f.op;
  const ext = (f as { _op?: { extension?: Array<{ url?: string; valueCode?: string }> } })._op?.extension;
  return ext?.find((e) => e.url === FILTER_OP_EXT)?.valueCode;
}

/**
 * The SQL predicate of one filter for code system `cs`. `path` is the FHIRPath of the filter
 * (for the error of a broken filter).
 */
export async function filterPredicate(
  tc: TermContext,
  cs: CodeSystemInfo,
  f: ValueSetComposeIncludeFilter,
  p: SqlParams,
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
  const idOf = async (code: string) => (await findConcept(tc, cs, code))?.id;
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
  if (isNotSelectableProperty(cs, property)) {
    const wanted = booleanValues(op, value, list);
    if (wanted) return wanted.length === 2 ? 'true' : wanted.length === 0 ? 'false' : `c.abstract = ${wanted[0]}`;
  }
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
    const ids = [...(await findConcepts(tc, cs, op === '=' ? [value] : list())).values()].map((c) => c.id);
    const targets = p.add(ids);
    return property === 'parent'
      ? `EXISTS (SELECT 1 FROM tx_closure h WHERE h.cs_key = c.cs_key AND h.descendant = c.id AND h.depth = 1 AND h.ancestor = ANY(${targets}::int[]))`
      : `EXISTS (SELECT 1 FROM tx_closure h WHERE h.cs_key = c.cs_key AND h.ancestor = c.id AND h.depth = 1 AND h.descendant = ANY(${targets}::int[]))`;
  }

  // Any other property: the stored (typed) property values of the concept.
  const P = p.add(property);
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
 * FHIR regex filters match the whole value. A pattern whose groups do not balance could close
 * the anchoring group (`a)|(b` → `^(?:a)|(b)$`, which matches far more): it is refused.
 */
export function anchored(pattern: string, path: string): string {
  if (pattern.length > MAX_REGEX_LENGTH) throw invalidValueSet(msg.badRegex(pattern.slice(0, 40) + '…'), path);
  if (!groupsBalance(pattern)) throw invalidValueSet(msg.badRegex(pattern.slice(0, 40)), path);
  return `^(?:${pattern})$`;
}

/** True when every `(` outside a bracket expression is closed by a `)` after it (escapes skipped). */
function groupsBalance(pattern: string): boolean {
  let depth = 0;
  let inBracket = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (inBracket) inBracket = !(c === ']' && pattern[i - 1] !== '[' && pattern.slice(i - 2, i) !== '[^');
    else if (c === '[') inBracket = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0 && !inBracket;
}

const NOT_SELECTABLE_URI = 'http://hl7.org/fhir/concept-properties#notSelectable';

/**
 * Whether a filter's property is the concept's notSelectable (abstract) flag: by its
 * conventional code (`notSelectable`, `abstract`), or a property the code system declares with
 * the concept-properties#notSelectable URI under another code (docs/terminology.md#value-set-membership).
 */
export function isNotSelectableProperty(cs: CodeSystemInfo, property: string): boolean {
  if (property === 'notSelectable' || property === 'abstract') return !cs.propertyDefs.some((d) => d.code === property && d.uri && d.uri !== NOT_SELECTABLE_URI);
  return cs.propertyDefs.some((d) => d.code === property && d.uri === NOT_SELECTABLE_URI);
}

/**
 * The flag values a boolean filter selects (`=`, `in`, `not-in`; a concept without the property
 * is `false`), or undefined for another operator. Values other than true/false are refused.
 */
export function booleanValues(op: string, value: string, list: () => string[]): boolean[] | undefined {
  if (op !== '=' && op !== 'in' && op !== 'not-in') return undefined;
  const given = op === '=' ? [value] : list();
  if (given.some((v) => v !== 'true' && v !== 'false')) return undefined;
  const named = [true, false].filter((b) => given.includes(String(b)));
  return op === 'not-in' ? [true, false].filter((b) => !named.includes(b)) : named;
}

/** A value set that cannot be evaluated: 400 with a tx `vs-invalid` issue at the filter. */
export function invalidValueSet(text: string, expression: string, id?: string): FhirError {
  return new FhirError(400, txIssueOutcome([{ severity: 'error', code: 'invalid', type: 'vs-invalid', id, text, expression }]));
}

/** Maps PostgreSQL's "invalid regular expression" error to a 400. */
export function regexError(err: unknown, pattern?: string, expression?: string): FhirError | undefined {
  const code = (err as { code?: string })?.code;
  if (code === '2201B') {
    // The message names the pattern as the value set gives it (anchored() wraps it).
    const given = pattern?.startsWith('^(?:') && pattern.endsWith(')$') ? pattern.slice(4, -2) : pattern;
    const text = msg.badRegex(given ?? String((err as Error).message ?? ''));
    return new FhirError(400, txIssueOutcome([{ severity: 'error', code: 'invalid', type: 'vs-invalid', text, expression }]));
  }
  return undefined;
}
