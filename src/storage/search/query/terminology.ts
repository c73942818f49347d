import type { Queryable } from '../../../core/database.js';
import type { ResourceRepository } from '../../../core/repository.js';
import type { SearchTerminology } from '../../../core/search.js';
import { FhirError, badRequest, issue } from '../../../fhir/outcome.js';
import { searchParameter } from '../parameters.js';
import { clip } from '../normalize.js';
import type { TermMatches } from './sql-params.js';
import { splitPipe, splitValues, unescapeValue } from './values.js';
import { comparisons, parseFilter } from './filter-expression.js';

/** Token modifiers answered by the terminology engine (docs/rest.md#terminology-modifiers). */
export const TERMINOLOGY_MODIFIERS = ['below', 'above', 'in', 'not-in'];

export function termKey(type: string, code: string, modifier: string, value: string): string {
  return `${type}\u0001${code}\u0001${modifier}\u0001${value}`;
}

/** One criterion the pre-pass must answer: `code:modifier=value` on a resource of `type`. */
export interface TermCriterion {
  type: string;
  code: string;
  modifier: string;
  value: string;
}

/**
 * Answers the terminology criteria of a search. A `:below` of a root concept never becomes a
 * SQL `IN` of the whole hierarchy: the candidates are the distinct codes stored for the
 * parameter (of the value's system), read from the token index — at most `maxCodes` of them,
 * else 400 `too-costly` — and the engine says which of them are below (above, in) the value;
 * the search then matches exactly those stored codings.
 */
export async function resolveTermCriteria(
  q: Queryable,
  criteria: TermCriterion[],
  maxCodes: number,
  terminology: SearchTerminology | undefined,
  repo: ResourceRepository | undefined,
): Promise<TermMatches> {
  const out: TermMatches = new Map();
  for (const c of criteria) {
    if (!terminology || !repo) throw badRequest(`Unsupported modifier ':${c.modifier}' for search parameter ${c.code}`);
    const key = termKey(c.type, c.code, c.modifier, c.value);
    if (out.has(key)) continue;
    if (c.modifier === 'below' || c.modifier === 'above') {
      const [system, rawCode] = splitPipe(c.value);
      const code = unescapeValue(rawCode);
      if (!system || !code) throw badRequest(`Search parameter ${c.code}:${c.modifier} needs a system and a code: ${c.code}:${c.modifier}=<system>|<code>`);
      const stored = await storedCodes(q, c, maxCodes, system);
      const related = await terminology.related(repo, system, code, c.modifier, stored.map(([, s]) => s));
      if (!related) throw badRequest(`Unknown code system '${system}' for search parameter ${c.code}:${c.modifier}`);
      out.set(key, stored.filter(([, s]) => related.has(s)));
    } else {
      const valueSet = unescapeValue(c.value);
      const stored = await storedCodes(q, c, maxCodes);
      const members = await terminology.members(repo, valueSet, stored.map(([system, code]) => ({ system, code })));
      if (!members) throw badRequest(`Unknown value set '${valueSet}' for search parameter ${c.code}:${c.modifier}`);
      out.set(key, stored.filter(([system, code]) => members.has(`${system}|${code}`)));
    }
  }
  return out;
}

/** `_filter` operators answered as terminology modifiers (docs/rest.md#filter). */
export const FILTER_TERM_OPS: Record<string, string> = { in: 'in', ni: 'not-in', sb: 'below', ss: 'above' };

/**
 * The terminology criteria among a search's parameters: top level `code:modifier=v1,v2`, and the
 * `in`/`ni`/`sb`/`ss` comparisons of a `_filter` on the type's own token parameters.
 */
export function termCriteria(type: string, params: Array<[string, string]>): TermCriterion[] {
  const out: TermCriterion[] = [];
  for (const [name, value] of params) {
    if (name === '_filter' && value.trim() !== '') {
      for (const node of comparisons(parseFilter(value))) {
        const modifier = FILTER_TERM_OPS[node.op];
        if (modifier && node.path.length === 1 && searchParameter(type, node.path[0])?.type === 'token') out.push({ type, code: node.path[0], modifier, value: node.value });
      }
      continue;
    }
    if (name.includes('.')) continue; // chains: refused where they are built
    const colon = name.indexOf(':');
    if (colon < 0) continue;
    const code = name.slice(0, colon);
    const modifier = name.slice(colon + 1);
    if (!TERMINOLOGY_MODIFIERS.includes(modifier) || searchParameter(type, code)?.type !== 'token') continue;
    for (const v of splitValues(value).filter((x) => x.length > 0)) out.push({ type, code, modifier, value: v });
  }
  return out;
}

/** Distinct (system, code) pairs stored for the parameter (of one system when given), bounded. */
async function storedCodes(q: Queryable, c: TermCriterion, maxCodes: number, system?: string): Promise<Array<[string, string]>> {
  const args: unknown[] = [c.type, c.code];
  let sql = 'SELECT DISTINCT system, code FROM search_token WHERE resource_type = $1 AND param = $2 AND code IS NOT NULL AND system IS NOT NULL';
  if (system !== undefined) {
    args.push(clip(system));
    sql += ' AND system = $3';
  }
  const rows = (await q.query<{ system: string; code: string }>(`${sql} LIMIT ${maxCodes + 1}`, args)).rows;
  if (rows.length > maxCodes) {
    throw new FhirError(400, [issue('too-costly', `Search parameter ${c.code}:${c.modifier} would test more than ${maxCodes} distinct stored codes (at most ${maxCodes}): narrow it`)]);
  }
  return rows.map((r) => [r.system, r.code]);
}
