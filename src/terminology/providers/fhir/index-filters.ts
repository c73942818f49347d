import type { ValueSetComposeInclude, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import type { CodeSystemIndex } from './code-system-index.js';
import { anchored, filterOp, invalidValueSet, isNotSelectableProperty, notSelectableCode, regexError } from '../filters.js';
import { msg } from '../../messages.js';
import type { CodeSystemInfo, TermContext } from '../../types.js';

/**
 * Value-set includes compiled to predicates over the in-memory index
 * (docs/terminology.md#in-memory-index): an include (its concept list, its filters ANDed,
 * active only) becomes one function of a concept id, compiled once per code-system index and
 * include and kept with the index, so a membership test is a few array probes. The semantics
 * are those of the SQL twin (sql-filters.ts), operator by operator — the equivalence test
 * compares both. Regular expressions run once per pattern in PostgreSQL (its automaton-based
 * engine has no catastrophic backtracking), over the index's values, and become id sets.
 */

/** A compiled include: is concept `id` selected? */
export type IdPredicate = (id: number) => boolean;

const ALL: IdPredicate = () => true;
const NONE: IdPredicate = () => false;

/** Compiled includes per include object (value sets are cached objects) and index. */
const keys = new WeakMap<object, string>();

function includeKey(inc: ValueSetComposeInclude, cs: CodeSystemInfo, activeOnly: boolean): string {
  let k = keys.get(inc);
  if (k === undefined) {
    k = JSON.stringify([inc.concept?.map((c) => c.code) ?? null, inc.filter ?? null]);
    keys.set(inc, k);
  }
  return `include ${cs.caseSensitive ? 1 : 0}${activeOnly ? 1 : 0} ${k}`;
}

/**
 * The predicate of an include over `index` (concept list, filters ANDed, active only); no
 * condition = the whole system. Throws the 400 of a filter that cannot be evaluated.
 */
export async function compileInclude(
  tc: TermContext,
  cs: CodeSystemInfo,
  index: CodeSystemIndex,
  inc: ValueSetComposeInclude,
  path: string,
  activeOnly: boolean,
): Promise<IdPredicate> {
  const key = includeKey(inc, cs, activeOnly);
  const memo = index.memo.get(key) as Promise<IdPredicate> | undefined;
  if (memo) return memo;
  const compiled = compile(tc, cs, index, inc, path, activeOnly);
  // Errors are not kept (they are thrown again, cheaply, by the next request).
  index.memo.set(key, compiled);
  compiled.catch(() => index.memo.delete(key));
  return compiled;
}

async function compile(
  tc: TermContext,
  cs: CodeSystemInfo,
  index: CodeSystemIndex,
  inc: ValueSetComposeInclude,
  path: string,
  activeOnly: boolean,
): Promise<IdPredicate> {
  const parts: IdPredicate[] = [];
  if (inc.concept) {
    const codes = inc.concept.map((c) => c.code).filter((c): c is string => typeof c === 'string');
    if (cs.caseSensitive) {
      const listed = new Set(codes);
      parts.push((id) => listed.has(index.code(id)));
    } else {
      const listed = new Set(codes.map((c) => c.toLowerCase()));
      parts.push((id) => listed.has(index.code(id).toLowerCase()));
    }
  }
  for (const [j, f] of (inc.filter ?? []).entries()) parts.push(await filterMatcher(tc, cs, index, f, `${path}.filter[${j}]`));
  if (activeOnly) parts.push((id) => !index.inactive(id));
  if (parts.length === 0) return ALL;
  if (parts.length === 1) return parts[0];
  return (id) => parts.every((p) => p(id));
}

/** One filter as a predicate (the in-memory twin of sql-filters.ts#filterPredicate). */
export async function filterMatcher(
  tc: TermContext,
  cs: CodeSystemInfo,
  index: CodeSystemIndex,
  f: ValueSetComposeIncludeFilter,
  path: string,
): Promise<IdPredicate> {
  const op = filterOp(f) ?? '';
  const property = f.property ?? '';
  if (typeof f.value !== 'string' || f.value === '') throw invalidValueSet(msg.filterNoValue(cs.url, property, op), path, 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE');
  const value = f.value;
  // Filters on properties read them all (a persisted index reads them in the background: wait for that read).
  await index.whenLoaded('properties');
  const list = () => value.split(',').map((v) => v.trim()).filter(Boolean);
  const insensitive = !cs.caseSensitive;
  const norm = (v: string) => (insensitive ? v.toLowerCase() : v);
  const codeOf = (id: number) => norm(index.code(id));
  const bool = () => {
    if (value !== 'true' && value !== 'false') throw invalidValueSet(msg.filterNotSupported(cs.url, property, `${op} ${value}`), path);
    return value === 'true';
  };
  const constant = (b: boolean): IdPredicate => (b ? ALL : NONE);

  if (property === 'concept' || property === 'code') {
    switch (op) {
      case '=': {
        const v = norm(value);
        return (id) => codeOf(id) === v;
      }
      case 'in': {
        const set = new Set(list().map(norm));
        return (id) => set.has(codeOf(id));
      }
      case 'not-in': {
        const set = new Set(list().map(norm));
        return (id) => !set.has(codeOf(id));
      }
      case 'regex': {
        const ids = await regexIds(tc, cs, index, { kind: 'code' }, anchored(value, path), path);
        return (id) => ids.has(id);
      }
      case 'exists':
        return constant(bool());
    }
    const x = index.idOf(value, insensitive);
    if (x === 0) return op === 'is-not-a' ? ALL : NONE;
    switch (op) {
      case 'is-a':
        return (id) => id === x || index.isAncestor(x, id);
      case 'descendent-of':
        return (id) => index.isAncestor(x, id);
      case 'is-not-a':
        return (id) => !(id === x || index.isAncestor(x, id));
      case 'generalizes':
        return (id) => id === x || index.isAncestor(id, x);
      case 'child-of':
        return (id) => index.parents(id).includes(x);
      case 'descendent-leaf':
        return (id) => index.isAncestor(x, id) && index.children(id).length === 0;
    }
    throw invalidValueSet(msg.filterNotSupported(cs.url, property, op), path);
  }

  if (property === 'inactive' && (op === '=' || op === 'exists')) {
    const b = bool();
    return op === 'exists' ? constant(b) : (id) => index.inactive(id) === b;
  }
  if (property === 'display') {
    // As in SQL, a concept without display satisfies no comparison (NULL), only `exists false`.
    switch (op) {
      case '=':
        return (id) => index.display(id) === value;
      case 'regex': {
        const ids = await regexIds(tc, cs, index, { kind: 'display' }, anchored(value, path), path);
        return (id) => ids.has(id);
      }
      case 'in': {
        const set = new Set(list());
        return (id) => set.has(index.display(id) as string);
      }
      case 'not-in': {
        const set = new Set(list());
        return (id) => index.display(id) !== undefined && !set.has(index.display(id) as string);
      }
      case 'exists': {
        const b = bool();
        return (id) => (index.display(id) !== undefined) === b;
      }
    }
  }
  if ((property === 'parent' || property === 'child') && (op === '=' || op === 'in')) {
    const targets = new Set((op === '=' ? [value] : list()).map((c) => index.idOf(c, insensitive)).filter((id) => id > 0));
    const related = property === 'parent' ? (id: number) => index.parents(id) : (id: number) => index.children(id);
    return (id) => related(id).some((r) => targets.has(r));
  }

  // Any other property: the stored (typed) property values of the concept (a notSelectable
  // filter reads the property that states the flag).
  const code = isNotSelectableProperty(cs, property) ? notSelectableCode(cs, property) : property;
  const values = (id: number) => index.properties(id).filter((p) => p.code === code).map((p) => p.value);
  switch (op) {
    case '=':
      return (id) => values(id).includes(value);
    case 'in': {
      const set = new Set(list());
      return (id) => values(id).some((v) => set.has(v));
    }
    case 'not-in': {
      const set = new Set(list());
      return (id) => !values(id).some((v) => set.has(v));
    }
    case 'regex': {
      const ids = await regexIds(tc, cs, index, { kind: 'property', code }, anchored(value, path), path);
      return (id) => ids.has(id);
    }
    case 'exists': {
      const b = bool();
      return (id) => values(id).length > 0 === b;
    }
    case 'is-a':
    case 'descendent-of': {
      // A property whose values are codes of this system (e.g. SNOMED attributes).
      const x = index.idOf(value, insensitive);
      if (x === 0) return NONE;
      const self = op === 'is-a';
      return (id) =>
        values(id).some((v) => {
          const target = index.idOf(v, false);
          return target > 0 && ((self && target === x) || index.isAncestor(x, target));
        });
    }
  }
  throw invalidValueSet(msg.filterNotSupported(cs.url, property, op), path);
}

type RegexTarget = { kind: 'code' } | { kind: 'display' } | { kind: 'property'; code: string };

/**
 * Ids of the concepts whose code / display / property value matches an (anchored) pattern,
 * computed once per index and pattern by PostgreSQL over the index's own values (so a
 * request-supplied code system is matched the same way as a stored one).
 */
async function regexIds(tc: TermContext, cs: CodeSystemInfo, index: CodeSystemIndex, target: RegexTarget, pattern: string, path?: string): Promise<Set<number>> {
  const key = `regex ${target.kind} ${target.kind === 'property' ? target.code : ''} ${pattern}`;
  const memo = index.memo.get(key) as Set<number> | undefined;
  if (memo) return memo;
  const ids: number[] = [];
  const values: string[] = [];
  for (let id = 1; id <= index.maxId; id++) {
    if (!index.has(id)) continue;
    if (target.kind === 'code') {
      ids.push(id);
      values.push(index.code(id));
    } else if (target.kind === 'display') {
      const d = index.display(id);
      if (d !== undefined) {
        ids.push(id);
        values.push(d);
      }
    } else {
      for (const p of index.properties(id)) {
        if (p.code !== target.code) continue;
        ids.push(id);
        values.push(p.value);
      }
    }
  }
  let matched: Set<number>;
  try {
    const res = await tc.db.query<{ id: number }>('SELECT DISTINCT t.id FROM unnest($1::int[], $2::text[]) AS t(id, v) WHERE t.v ~ $3', [ids, values, pattern]);
    matched = new Set(res.rows.map((r) => r.id));
  } catch (err) {
    throw regexError(err, pattern, path) ?? err;
  }
  index.memo.set(key, matched);
  return matched;
}
