import { SEARCH_NESTING_CEILING } from '../../../config.js';
import { FhirError, badRequest, issue } from '../../../fhir/outcome.js';

/**
 * The `_filter` grammar of FHIR R4 (docs/rest.md#filter), parsed into a tree the query builder
 * translates (filter-sql.ts): comparisons `<path> <op> <value>` combined with `and`, `or`, `not(…)`
 * and parentheses; a path is a parameter name, optionally through references
 * (`subject.name eq peter`) or narrowed by a filter on a repeating element (`name[use eq official].family`
 * is not supported: only the reference form).
 */
export type FilterNode =
  | { kind: 'and' | 'or'; operands: FilterNode[] }
  | { kind: 'not'; inner: FilterNode }
  | { kind: 'compare'; path: string[]; op: FilterOp; value: string };

export const FILTER_OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'ap', 'sa', 'eb', 'pr', 'po', 'ss', 'sb', 'in', 'ni', 're'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

interface Token {
  text: string;
  quoted: boolean;
  at: number;
}

/**
 * Parses a `_filter` value; 400 `Invalid _filter '<v>': <reason> at position <n>` when it does not
 * parse. The parser recurses once per level of parentheses, so the nesting is measured first,
 * without recursion: deeper than `maxDepth` (`LATTICE_SEARCH_MAX_FILTER_DEPTH` for a search's
 * own `_filter`) → 400 `too-costly`. A run of `and`/`or` is one node with many operands, so a long
 * flat expression makes a wide tree, never a deep one.
 */
export function parseFilter(source: string, maxDepth = SEARCH_NESTING_CEILING): FilterNode {
  const tokens = tokenize(source);
  const depth = nesting(tokens);
  if (depth > maxDepth) throw new FhirError(400, [issue('too-costly', `_filter nested too deep: ${depth} levels (at most ${maxDepth})`)]);
  let i = 0;
  const fail = (reason: string, at = tokens[i]?.at ?? source.length): never => {
    throw badRequest(`Invalid _filter '${source}': ${reason} at position ${at + 1}`);
  };
  const peek = (): Token | undefined => tokens[i];
  const word = (t: Token | undefined, w: string) => t !== undefined && !t.quoted && t.text.toLowerCase() === w;

  const parseOr = (): FilterNode => {
    const operands = [parseAnd()];
    while (word(peek(), 'or')) {
      i++;
      operands.push(parseAnd());
    }
    return operands.length === 1 ? operands[0] : { kind: 'or', operands };
  };
  const parseAnd = (): FilterNode => {
    const operands = [parseUnary()];
    while (word(peek(), 'and')) {
      i++;
      operands.push(parseUnary());
    }
    return operands.length === 1 ? operands[0] : { kind: 'and', operands };
  };
  const parseUnary = (): FilterNode => {
    const t = peek();
    if (t === undefined) return fail('expected a comparison');
    if (word(t, 'not') && tokens[i + 1]?.text === '(' && !tokens[i + 1].quoted) {
      i++;
      return { kind: 'not', inner: parseGroup() };
    }
    if (t.text === '(' && !t.quoted) return parseGroup();
    return parseComparison();
  };
  const parseGroup = (): FilterNode => {
    i++; // (
    const inner = parseOr();
    if (peek()?.text !== ')' || peek()?.quoted) return fail("expected ')'");
    i++;
    return inner;
  };
  const parseComparison = (): FilterNode => {
    const pathToken = tokens[i];
    if (pathToken.quoted || pathToken.text === '(' || pathToken.text === ')') return fail('expected a parameter name');
    const path = pathToken.text.split('.');
    // Each link is a nested subquery built recursively (the search's own bound is LATTICE_SEARCH_MAX_CHAIN).
    if (path.length - 1 > SEARCH_NESTING_CEILING) {
      throw new FhirError(400, [issue('too-costly', `_filter chain too deep: ${path.length - 1} links (at most ${SEARCH_NESTING_CEILING})`)]);
    }
    if (path.some((p) => !/^[A-Za-z_][A-Za-z0-9_-]*(:[A-Za-z]+)?$/.test(p))) return fail(`invalid parameter path '${pathToken.text}'`, pathToken.at);
    i++;
    const opToken = tokens[i];
    if (!opToken || opToken.quoted || !(FILTER_OPS as readonly string[]).includes(opToken.text.toLowerCase())) return fail('expected an operator (eq, ne, co, sw, ew, gt, lt, ge, le, ap, sa, eb, pr, po, ss, sb, in, ni, re)');
    i++;
    const valueToken = tokens[i];
    if (!valueToken || (!valueToken.quoted && (valueToken.text === '(' || valueToken.text === ')'))) return fail('expected a value');
    i++;
    return { kind: 'compare', path, op: opToken.text.toLowerCase() as FilterOp, value: valueToken.text };
  };

  const tree = parseOr();
  if (i < tokens.length) fail(`unexpected '${tokens[i].text}'`);
  return tree;
}

/** The comparisons of a tree, in order (their number is a bound of docs/rest.md#limits). */
export function comparisons(node: FilterNode): Array<Extract<FilterNode, { kind: 'compare' }>> {
  if (node.kind === 'compare') return [node];
  if (node.kind === 'not') return comparisons(node.inner);
  return node.operands.flatMap(comparisons);
}

/** The deepest nesting of parentheses among the tokens (one pass, no recursion). */
function nesting(tokens: Token[]): number {
  let depth = 0;
  let deepest = 0;
  for (const t of tokens) {
    if (t.quoted) continue;
    if (t.text === '(') deepest = Math.max(deepest, ++depth);
    else if (t.text === ')') depth = Math.max(0, depth - 1);
  }
  return deepest;
}

/** Words, parentheses and JSON-style quoted strings (`"a \"b\""`). */
function tokenize(source: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ text: c, quoted: false, at: i });
      i++;
    } else if (c === '"') {
      const start = i;
      let text = '';
      i++;
      while (i < source.length && source[i] !== '"') {
        if (source[i] === '\\' && i + 1 < source.length) {
          i++;
          text += source[i] === 'n' ? '\n' : source[i] === 't' ? '\t' : source[i];
        } else text += source[i];
        i++;
      }
      if (i >= source.length) throw badRequest(`Invalid _filter '${source}': unterminated string at position ${start + 1}`);
      i++;
      out.push({ text, quoted: true, at: start });
    } else {
      const start = i;
      while (i < source.length && !/[\s()]/.test(source[i])) i++;
      out.push({ text: source.slice(start, i), quoted: false, at: start });
    }
  }
  return out;
}
