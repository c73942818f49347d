import type { Expression } from '../ecl/ast.js';
import { eclSelects, type EclEvalOptions, type VirtualConcept } from '../ecl/evaluate.js';
import { SCT, type EclGraph } from '../ecl/graph.js';

/**
 * SNOMED CT Compositional Grammar v2: postcoordinated expressions such as
 * `128241005 |Inflammatory disease| : { 363698007 |Finding site| = 181268008 }`
 * (docs/terminology.md#postcoordinated-expressions-compositional-grammar). A hand-written parser
 * over the normative ABNF, a printer, and a check of the concepts against an EclGraph that
 * returns the problems as data.
 */

export interface ExprConceptReference {
  readonly sctid: string;
  readonly term?: string;
  /** 0-based offset of the id in the text. */
  readonly pos: number;
}

/** `focus [: refinement]`, the part nested values repeat. */
export interface SubExpression {
  readonly focus: readonly ExprConceptReference[];
  /** Ungrouped attributes, then the groups (each a list of attributes). */
  readonly attributes: readonly ExprAttribute[];
  readonly groups: readonly (readonly ExprAttribute[])[];
}

export interface PostcoordinatedExpression extends SubExpression {
  /** `===` (equivalent to) or `<<<` (subtype of); absent when not written (equivalence is meant). */
  readonly definitionStatus?: 'equivalentTo' | 'subtypeOf';
}

export interface ExprAttribute {
  readonly name: ExprConceptReference;
  readonly value: ExprValue;
}

export type ExprValue =
  | { readonly kind: 'concept'; readonly concept: ExprConceptReference }
  | { readonly kind: 'expression'; readonly expression: SubExpression }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly value: number; readonly text: string };

export class ExpressionSyntaxError extends Error {
  constructor(
    readonly position: number,
    message: string,
  ) {
    super(message);
    this.name = 'ExpressionSyntaxError';
  }
}

/** Nesting bound for `( … )` values. */
export const MAX_EXPRESSION_DEPTH = 20;

/** Whether a code looks like a postcoordinated expression rather than a plain SCTID. */
export function isPostcoordinated(code: string): boolean {
  return !/^\s*[1-9][0-9]{5,17}\s*$/.test(code);
}

export function parseExpression(text: string): PostcoordinatedExpression {
  const p = new ExprParser(text);
  p.ws();
  let definitionStatus: PostcoordinatedExpression['definitionStatus'];
  if (text.startsWith('===', p.pos)) definitionStatus = 'equivalentTo';
  else if (text.startsWith('<<<', p.pos)) definitionStatus = 'subtypeOf';
  if (definitionStatus) {
    p.pos += 3;
    p.ws();
  }
  const sub = p.subExpression();
  p.ws();
  if (p.pos < text.length) p.fail(sub.attributes.length || sub.groups.length ? "',', '{' or the end of the expression" : "'+', ':' or the end of the expression");
  return definitionStatus ? { definitionStatus, ...sub } : sub;
}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

class ExprParser {
  pos = 0;
  private depth = 0;

  constructor(private readonly src: string) {}

  fail(expected: string, at = this.pos): never {
    throw new ExpressionSyntaxError(at, `expected ${expected} at ${at}`);
  }

  private ch(): string {
    return this.src[this.pos] ?? '';
  }

  ws(): boolean {
    const start = this.pos;
    while (' \t\r\n'.includes(this.ch()) && this.ch() !== '') this.pos++;
    return this.pos > start;
  }

  /** Looks past whitespace without consuming it. */
  private peek(): string {
    const save = this.pos;
    this.ws();
    const c = this.ch();
    this.pos = save;
    return c;
  }

  subExpression(): SubExpression {
    if (++this.depth > MAX_EXPRESSION_DEPTH) throw new ExpressionSyntaxError(this.pos, `expression nested deeper than ${MAX_EXPRESSION_DEPTH} at ${this.pos}`);
    const focus = [this.conceptReference()];
    while (this.peek() === '+') {
      this.ws();
      this.pos++;
      this.ws();
      focus.push(this.conceptReference());
    }
    const attributes: ExprAttribute[] = [];
    const groups: ExprAttribute[][] = [];
    if (this.peek() === ':') {
      this.ws();
      this.pos++;
      this.ws();
      if (this.ch() === '{') groups.push(this.group());
      else attributes.push(...this.attributeSet());
      // *( ws ["," ws] attributeGroup )
      for (;;) {
        const save = this.pos;
        this.ws();
        if (this.ch() === ',') {
          this.pos++;
          this.ws();
          if (this.ch() !== '{') this.fail("'{'");
        }
        if (this.ch() !== '{') {
          this.pos = save;
          break;
        }
        groups.push(this.group());
      }
    }
    this.depth--;
    return { focus, attributes, groups };
  }

  private group(): ExprAttribute[] {
    this.pos++; // {
    this.ws();
    const set = this.attributeSet();
    this.ws();
    if (this.ch() !== '}') this.fail("',' or '}'");
    this.pos++;
    return set;
  }

  private attributeSet(): ExprAttribute[] {
    const set = [this.attribute()];
    for (;;) {
      const save = this.pos;
      this.ws();
      if (this.ch() !== ',') {
        this.pos = save;
        return set;
      }
      this.pos++;
      this.ws();
      if (this.ch() === '{') {
        // `attributes, { group }`: the comma belongs to the refinement
        this.pos = save;
        return set;
      }
      set.push(this.attribute());
    }
  }

  private attribute(): ExprAttribute {
    const name = this.conceptReference();
    this.ws();
    if (this.ch() !== '=') this.fail("'='");
    this.pos++;
    this.ws();
    return { name, value: this.value() };
  }

  private value(): ExprValue {
    const c = this.ch();
    if (c === '#') {
      this.pos++;
      const start = this.pos;
      const signed = this.ch() === '-' || this.ch() === '+';
      if (signed) this.pos++;
      if (!signed && this.ch() === '0') this.pos++;
      else if (isDigit(this.ch()) && this.ch() !== '0') while (isDigit(this.ch())) this.pos++;
      else this.fail(signed ? 'a digit from 1 to 9 after the sign' : 'a number');
      if (this.ch() === '.') {
        this.pos++;
        if (!isDigit(this.ch())) this.fail('a digit after the decimal point');
        while (isDigit(this.ch())) this.pos++;
      }
      const text = this.src.slice(start, this.pos);
      return { kind: 'number', value: Number(text), text };
    }
    if (c === '"') {
      const open = this.pos;
      this.pos++;
      let value = '';
      for (;;) {
        const x = this.ch();
        if (x === '') this.fail("'\"' closing the string", this.src.length);
        if (x === '"') break;
        if (x === '\\') {
          const n = this.src[this.pos + 1];
          if (n !== '"' && n !== '\\') this.fail("'\\\"' or '\\\\'");
          value += n;
          this.pos += 2;
          continue;
        }
        value += x;
        this.pos++;
      }
      this.pos++;
      if (!value) this.fail('a string between the quotes', open + 1);
      return { kind: 'string', value };
    }
    if (c === '(') {
      this.pos++;
      this.ws();
      const expression = this.subExpression();
      this.ws();
      if (this.ch() !== ')') this.fail(expression.attributes.length || expression.groups.length ? "',', '{' or ')'" : "'+', ':' or ')'");
      this.pos++;
      return { kind: 'expression', expression };
    }
    return { kind: 'concept', concept: this.conceptReference("a concept reference, '(', '#' or '\"'") };
  }

  private conceptReference(what = 'a concept reference'): ExprConceptReference {
    const start = this.pos;
    if (!isDigit(this.ch()) || this.ch() === '0') this.fail(what === 'a concept reference' ? 'a concept reference (an SCTID: 6 to 18 digits, not starting with 0)' : what);
    while (isDigit(this.ch())) this.pos++;
    const len = this.pos - start;
    if (len < 6 || len > 18) this.fail('a concept reference (an SCTID: 6 to 18 digits, not starting with 0)', start);
    const sctid = this.src.slice(start, this.pos);
    const save = this.pos;
    this.ws();
    if (this.ch() !== '|') {
      this.pos = save;
      return { sctid, pos: start };
    }
    const close = this.src.indexOf('|', this.pos + 1);
    if (close < 0) this.fail("'|' closing the term", this.src.length);
    const term = this.src.slice(this.pos + 1, close).trim();
    if (!term) this.fail('a term between the bars', this.pos + 1);
    this.pos = close + 1;
    return { sctid, term, pos: start };
  }
}

// ---- printing ----------------------------------------------------------------------------------

/**
 * The expression in a canonical form: no terms, no spaces, focus concepts, attributes and groups
 * sorted (ungrouped attributes first), `===` left out (it is the default).
 */
export function printExpression(e: PostcoordinatedExpression | SubExpression): string {
  const status = 'definitionStatus' in e && e.definitionStatus === 'subtypeOf' ? '<<<' : '';
  return status + printSub(e);
}

function printSub(e: SubExpression): string {
  const focus = [...new Set(e.focus.map((c) => c.sctid))].sort(bySctid).join('+');
  const attrs = (list: readonly ExprAttribute[]) => [...new Set(list.map(printAttribute))].sort().join(',');
  const parts: string[] = [];
  if (e.attributes.length) parts.push(attrs(e.attributes));
  for (const g of [...new Set(e.groups.map((g) => `{${attrs(g)}}`))].sort()) parts.push(g);
  return parts.length ? `${focus}:${parts.join(',')}` : focus;
}

function printAttribute(a: ExprAttribute): string {
  const v = a.value;
  const value =
    v.kind === 'concept' ? v.concept.sctid : v.kind === 'expression' ? `(${printSub(v.expression)})` : v.kind === 'string' ? `"${v.value.replace(/["\\]/g, '\\$&')}"` : `#${v.text}`;
  return `${a.name.sctid}=${value}`;
}

function bySctid(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

// ---- checking ----------------------------------------------------------------------------------

/**
 * Attribute names must be below one of these: 410662002 |Concept model attribute| and
 * 106237007 |Linkage concept| (those the edition has; with neither, names are not checked).
 */
export const ATTRIBUTE_ROOTS = ['410662002', '106237007'] as const;

export interface ExpressionProblem {
  /** unknown: the edition does not have the concept; inactive: it is inactive; not-attribute: an attribute name below none of ATTRIBUTE_ROOTS. */
  readonly kind: 'unknown' | 'inactive' | 'not-attribute';
  readonly sctid: string;
  /** Where the concept is used. */
  readonly role: 'focus' | 'attribute' | 'value';
  /** 0-based offset of the id in the expression text. */
  readonly pos: number;
}

/**
 * Checks every concept of the expression against the edition: it exists and is active, and
 * attribute names are below one of ATTRIBUTE_ROOTS. Returns the problems in text order; none
 * means the expression is valid here (the concept model's domain and range rules are not
 * checked).
 */
export function checkExpression(graph: EclGraph, e: PostcoordinatedExpression | SubExpression): ExpressionProblem[] {
  const out: ExpressionProblem[] = [];
  const roots = ATTRIBUTE_ROOTS.map((r) => graph.resolve(r)).filter((x): x is number => x !== undefined);
  const concept = (c: ExprConceptReference, role: ExpressionProblem['role']): void => {
    const id = graph.resolve(c.sctid);
    if (id === undefined) {
      out.push({ kind: 'unknown', sctid: c.sctid, role, pos: c.pos });
      return;
    }
    if (!graph.isActive(id)) out.push({ kind: 'inactive', sctid: c.sctid, role, pos: c.pos });
    if (role === 'attribute' && roots.length && !roots.some((r) => includes(graph.ancestors(id), r))) out.push({ kind: 'not-attribute', sctid: c.sctid, role, pos: c.pos });
  };
  const walk = (s: SubExpression): void => {
    for (const f of s.focus) concept(f, 'focus');
    for (const a of [...s.attributes, ...s.groups.flat()]) {
      concept(a.name, 'attribute');
      if (a.value.kind === 'concept') concept(a.value.concept, 'value');
      else if (a.value.kind === 'expression') walk(a.value.expression);
    }
  };
  walk(e);
  return out.sort((a, b) => a.pos - b.pos);
}

/**
 * A problem in words, as the HL7 test cases word them (after `Not a valid expression: `):
 * `Concept <id> not found`, `Concept <id> is inactive`, `Concept <id> is not valid in this
 * context (must be a descendent of one of 410662002,106237007)`.
 */
export function expressionProblemText(p: ExpressionProblem): string {
  switch (p.kind) {
    case 'unknown':
      return `Concept ${p.sctid} not found`;
    case 'inactive':
      return `Concept ${p.sctid} is inactive`;
    case 'not-attribute':
      return `Concept ${p.sctid} is not valid in this context (must be a descendent of one of ${ATTRIBUTE_ROOTS.join(',')})`;
  }
}

/**
 * The expression as written, with each concept's term from `term` (the edition's preferred
 * term) in bars and no whitespace: `128241005|Inflammatory disease of liver|:{363698007|Finding
 * site|=181268008|Entire liver|}` — the display of a postcoordinated code.
 */
export function displayExpression(e: PostcoordinatedExpression | SubExpression, term: (sctid: string) => string | undefined): string {
  const ref = (c: ExprConceptReference) => {
    const t = term(c.sctid);
    return t === undefined ? c.sctid : `${c.sctid}|${t}|`;
  };
  const attr = (a: ExprAttribute): string => {
    const v = a.value;
    const value = v.kind === 'concept' ? ref(v.concept) : v.kind === 'expression' ? `(${sub(v.expression)})` : v.kind === 'string' ? `"${v.value.replace(/["\\]/g, '\\$&')}"` : `#${v.text}`;
    return `${ref(a.name)}=${value}`;
  };
  const sub = (s: SubExpression): string => {
    const parts: string[] = [];
    if (s.attributes.length) parts.push(s.attributes.map(attr).join(','));
    for (const g of s.groups) parts.push(`{${g.map(attr).join(',')}}`);
    const focus = s.focus.map(ref).join('+');
    return parts.length ? `${focus}:${parts.join(',')}` : focus;
  };
  const status = 'definitionStatus' in e && e.definitionStatus ? (e.definitionStatus === 'subtypeOf' ? '<<<' : '===') : '';
  return status + sub(e);
}

function includes(list: ArrayLike<number>, x: number): boolean {
  let lo = 0;
  let hi = list.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid] === x) return true;
    if (list[mid] < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

// ---- as a concept ------------------------------------------------------------------------------

/**
 * The expression as a virtual concept for the ECL evaluator (`eclSelects`): its parents are the
 * focus concepts; its attributes are the refinement's (ungrouped ones in group 0, groups
 * numbered from 1), plus the focus concepts' own attributes and concrete values of the types
 * the refinement does not mention (each focus concept's groups renumbered after the others);
 * nested values become nested virtual concepts. Undefined when a concept is unknown (see
 * checkExpression).
 */
export function virtualConcept(graph: EclGraph, e: PostcoordinatedExpression | SubExpression): VirtualConcept | undefined {
  const id = (c: ExprConceptReference) => graph.resolve(c.sctid);
  const build = (s: SubExpression, status: number | undefined): VirtualConcept | undefined => {
    const parents: number[] = [];
    for (const f of s.focus) {
      const p = id(f);
      if (p === undefined) return undefined;
      parents.push(p);
    }
    const attributes: Array<readonly [number, number, number | VirtualConcept]> = [];
    const concrete: Array<{ group: number; typeId: number; value: number | string | boolean }> = [];
    const refined = new Set<number>();
    const add = (a: ExprAttribute, group: number): boolean => {
      const t = id(a.name);
      if (t === undefined) return false;
      refined.add(t);
      const v = a.value;
      if (v.kind === 'string' || v.kind === 'number') concrete.push({ group, typeId: t, value: v.value });
      else {
        const d = v.kind === 'concept' ? id(v.concept) : build(v.expression, undefined);
        if (d === undefined) return false;
        attributes.push([group, t, d]);
      }
      return true;
    };
    for (const a of s.attributes) if (!add(a, 0)) return undefined;
    let nextGroup = 1;
    for (const g of s.groups) {
      for (const a of g) if (!add(a, nextGroup)) return undefined;
      nextGroup++;
    }
    for (const p of parents) {
      let maxGroup = 0;
      const rels = graph.attributes(p);
      for (let k = 0; k < rels.length; k += 3) {
        if (refined.has(rels[k + 1])) continue;
        attributes.push([rels[k] === 0 ? 0 : rels[k] + nextGroup - 1, rels[k + 1], rels[k + 2]]);
        maxGroup = Math.max(maxGroup, rels[k]);
      }
      for (const c of graph.concreteValues(p)) {
        if (refined.has(c.typeId)) continue;
        concrete.push({ group: c.group === 0 ? 0 : c.group + nextGroup - 1, typeId: c.typeId, value: c.value });
        maxGroup = Math.max(maxGroup, c.group);
      }
      nextGroup += maxGroup;
    }
    return status === undefined ? { parents, attributes, concrete } : { parents, attributes, concrete, definitionStatus: status };
  };
  const statusSctid = 'definitionStatus' in e && e.definitionStatus === 'subtypeOf' ? SCT.primitive : SCT.defined;
  return build(e, graph.resolve(statusSctid));
}

// ---- a code against an expression constraint ---------------------------------------------------

export type CodeSelection =
  | { readonly kind: 'selected' | 'not-selected' }
  /** The code is neither an SCTID the edition knows nor a valid expression over it. */
  | { readonly kind: 'unknown'; readonly problems: readonly ExpressionProblem[] }
  | { readonly kind: 'syntax-error'; readonly error: ExpressionSyntaxError };

/**
 * Whether an expression constraint selects a code: a concept id, or a postcoordinated
 * expression (parsed, checked, and tested as a virtual concept). The one call a provider needs
 * for ECL value sets (docs/terminology.md#postcoordinated-expressions-compositional-grammar).
 */
export async function eclSelectsCode(graph: EclGraph, ecl: Expression | string, code: string, options: EclEvalOptions = {}): Promise<CodeSelection> {
  if (!isPostcoordinated(code)) {
    const id = graph.resolve(code.trim());
    if (id === undefined) return { kind: 'unknown', problems: [{ kind: 'unknown', sctid: code.trim(), role: 'focus', pos: code.indexOf(code.trim()) }] };
    return { kind: (await eclSelects(graph, ecl, id, options)) ? 'selected' : 'not-selected' };
  }
  let e: PostcoordinatedExpression;
  try {
    e = parseExpression(code);
  } catch (err) {
    if (err instanceof ExpressionSyntaxError) return { kind: 'syntax-error', error: err };
    throw err;
  }
  const problems = checkExpression(graph, e).filter((p) => p.kind !== 'inactive');
  if (problems.length) return { kind: 'unknown', problems };
  // a lone concept with a term is that concept
  if (e.focus.length === 1 && !e.attributes.length && !e.groups.length) {
    const id = graph.resolve(e.focus[0].sctid)!;
    return { kind: (await eclSelects(graph, ecl, id, options)) ? 'selected' : 'not-selected' };
  }
  const v = virtualConcept(graph, e)!;
  return { kind: (await eclSelects(graph, ecl, v, options)) ? 'selected' : 'not-selected' };
}
