import type {
  Acceptability,
  Attribute,
  AttributeGroup,
  AttributeValue,
  Cardinality,
  ComparisonOperator,
  ConceptFilter,
  ConceptReference,
  ConceptSetOperand,
  DescriptionFilter,
  DialectEntry,
  EffectiveTimeFilter,
  Expression,
  HierarchyOperator,
  MemberFieldValue,
  MemberFilter,
  Refinement,
  SearchTerm,
} from './ast.js';

/**
 * A hand-written recursive-descent parser for ECL 2.x, following the normative ABNF rule by rule
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl). Scannerless: it reads characters.
 * Comments and whitespace are allowed wherever the grammar's `ws` is; keywords are
 * case-insensitive; `|terms|` are kept on the node but mean nothing.
 *
 * Errors are `EclSyntaxError`s whose message is `expected <what> at <offset>` (0-based offset
 * into the text) or one of the few other texts the docs list.
 */

/** A syntax error: `position` is the 0-based offset of the character that could not be read. */
export class EclSyntaxError extends Error {
  constructor(
    readonly position: number,
    message: string,
  ) {
    super(message);
    this.name = 'EclSyntaxError';
  }
}

/** How deeply parentheses, refinements and nested constraints may nest. */
export const MAX_ECL_DEPTH = 50;
/** The longest expression parsed (characters). */
export const MAX_ECL_LENGTH = 100_000;

/** Parses one expression constraint (the whole text). */
export function parseEcl(text: string): Expression {
  if (text.length > MAX_ECL_LENGTH) throw new EclSyntaxError(MAX_ECL_LENGTH, `expression longer than ${MAX_ECL_LENGTH} characters`);
  const p = new Parser(text);
  p.ws();
  const e = p.expression();
  p.ws();
  if (!p.eof()) p.fail(p.afterExpression(e));
  return e;
}

const PARSE_CACHE_MAX = 1_000;
const PARSE_CACHE_MAX_LENGTH = 10_000;
const parsed = new Map<string, Expression>();

/**
 * parseEcl with the trees of recent texts kept (at most 1 000 texts of up to 10 000 characters,
 * least recently used out): a value set's expression is parsed once, not per request. The trees
 * are shared; they are read-only.
 */
export function parseEclCached(text: string): Expression {
  const hit = parsed.get(text);
  if (hit) {
    parsed.delete(text);
    parsed.set(text, hit);
    return hit;
  }
  const tree = parseEcl(text);
  if (text.length <= PARSE_CACHE_MAX_LENGTH) {
    parsed.set(text, tree);
    if (parsed.size > PARSE_CACHE_MAX) parsed.delete(parsed.keys().next().value as string);
  }
  return tree;
}

type Logical = { kind: 'and' | 'or' | 'minus'; len: number; pos: number };

const HIERARCHY: ReadonlyArray<[string, HierarchyOperator]> = [
  ['<<!', 'childOrSelfOf'],
  ['<<', 'descendantOrSelfOf'],
  ['<!', 'childOf'],
  ['<', 'descendantOf'],
  ['>>!', 'parentOrSelfOf'],
  ['>>', 'ancestorOrSelfOf'],
  ['>!', 'parentOf'],
  ['>', 'ancestorOf'],
  ['!!>', 'top'],
  ['!!<', 'bottom'],
];

const isDigit = (c: string) => c >= '0' && c <= '9';
const isAlpha = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isWsChar = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';

const DESCRIPTION_KEYWORDS = new Set(['term', 'language', 'type', 'typeid', 'dialect', 'dialectid', 'moduleid', 'effectivetime', 'active', 'id']);
const CONCEPT_KEYWORDS = new Set(['definitionstatus', 'definitionstatusid', 'moduleid', 'effectivetime', 'active']);

class Parser {
  pos = 0;
  private depth = 0;

  constructor(private readonly src: string) {}

  fail(expected: string, at = this.pos): never {
    throw new EclSyntaxError(at, `expected ${expected} at ${at}`);
  }

  eof(): boolean {
    return this.pos >= this.src.length;
  }

  private ch(offset = 0): string {
    return this.src[this.pos + offset] ?? '';
  }

  private enter(): void {
    if (++this.depth > MAX_ECL_DEPTH) throw new EclSyntaxError(this.pos, `expression nested deeper than ${MAX_ECL_DEPTH} at ${this.pos}`);
  }

  private leave(): void {
    this.depth--;
  }

  /** Optional whitespace and comments; true when something was skipped. */
  ws(): boolean {
    const start = this.pos;
    for (;;) {
      const c = this.ch();
      if (isWsChar(c)) this.pos++;
      else if (c === '/' && this.ch(1) === '*') {
        const end = this.src.indexOf('*/', this.pos + 2);
        if (end < 0) this.fail("'*/' closing the comment", this.src.length);
        this.pos = end + 2;
      } else break;
    }
    return this.pos > start;
  }

  /** Mandatory whitespace. */
  private mws(what: string): void {
    if (!this.ws()) this.fail(what);
  }

  private expect(s: string, what = `'${s}'`): void {
    if (!this.src.startsWith(s, this.pos)) this.fail(what);
    this.pos += s.length;
  }

  /** Whether the text at the position is the keyword (any case). */
  private atKeyword(word: string, at = this.pos): boolean {
    return this.src.slice(at, at + word.length).toLowerCase() === word;
  }

  /** Whether whitespace or a comment starts at `at` (what `mws` needs). */
  private wsAt(at: number): boolean {
    const c = this.src[at] ?? '';
    return isWsChar(c) || (c === '/' && this.src[at + 1] === '*');
  }

  /** The run of letters at the position (not consumed). */
  private word(at = this.pos): string {
    let end = at;
    while (isAlpha(this.src[end] ?? '')) end++;
    return this.src.slice(at, end);
  }

  /** AND (or `,`), OR or MINUS at the position, followed by the whitespace the grammar needs. */
  private logical(): Logical | undefined {
    const at = this.pos;
    if (this.ch() === ',') return { kind: 'and', len: 1, pos: at };
    for (const [word, kind] of [
      ['and', 'and'],
      ['or', 'or'],
      ['minus', 'minus'],
    ] as const) {
      if (!this.atKeyword(word)) continue;
      const after = at + word.length;
      if (this.wsAt(after) || after === this.src.length) return { kind, len: word.length, pos: after - word.length };
      if (this.src[after] === '(') this.fail(`whitespace after ${word.toUpperCase()}`, after);
    }
    return undefined;
  }

  /** What may follow a complete expression when something else is found. */
  afterExpression(e: Expression): string {
    if (e.type === 'and' || e.type === 'or' || e.type === 'minus' || e.type === 'refined' || e.type === 'dotted') return 'the end of the expression';
    return "':', '.', AND, OR, MINUS or the end of the expression";
  }

  // ---- expressionConstraint ------------------------------------------------------------------

  expression(): Expression {
    const start = this.pos;
    const first = this.sub();
    const mark = this.pos;
    this.ws();
    const c = this.ch();
    if (c === ':') {
      this.pos++;
      this.ws();
      return { type: 'refined', pos: start, focus: first, refinement: this.refinement() };
    }
    if (c === '.' && this.ch(1) !== '.') {
      let node: Expression = first;
      for (;;) {
        this.pos++;
        this.ws();
        node = { type: 'dotted', pos: start, focus: node, attribute: this.sub() };
        const m = this.pos;
        this.ws();
        if (this.ch() !== '.') {
          this.pos = m;
          return node;
        }
      }
    }
    const op = this.logical();
    if (!op) {
      this.pos = mark;
      return first;
    }
    const operands: Expression[] = [first];
    let at: Logical | undefined = op;
    let end = mark;
    while (at) {
      if (at.kind !== op.kind) throw new EclSyntaxError(at.pos, `expected parentheses: AND, OR and MINUS cannot be mixed at ${at.pos}`);
      if (op.kind === 'minus' && operands.length === 2) throw new EclSyntaxError(at.pos, `expected parentheses: MINUS takes two operands at ${at.pos}`);
      this.pos += at.len;
      this.ws();
      operands.push(this.sub());
      end = this.pos;
      this.ws();
      at = this.logical();
    }
    this.pos = end;
    if (op.kind === 'minus') return { type: 'minus', pos: start, left: operands[0], right: operands[1] };
    return { type: op.kind, pos: start, operands };
  }

  // ---- subExpressionConstraint ---------------------------------------------------------------

  sub(): Expression {
    this.enter();
    const start = this.pos;
    let operator: HierarchyOperator | undefined;
    for (const [s, op] of HIERARCHY) {
      if (this.src.startsWith(s, this.pos)) {
        operator = op;
        this.pos += s.length;
        this.ws();
        break;
      }
    }
    let node: Expression;
    if (this.ch() === '^') {
      const memberPos = this.pos;
      this.pos++;
      let fields: string[] | '*' | undefined;
      const mark = this.pos;
      this.ws();
      if (this.ch() === '[') {
        this.pos++;
        this.ws();
        if (this.ch() === '*') {
          this.pos++;
          fields = '*';
        } else {
          fields = [this.fieldName()];
          for (;;) {
            const m = this.pos;
            this.ws();
            if (this.ch() !== ',') {
              this.pos = m;
              break;
            }
            this.pos++;
            this.ws();
            fields.push(this.fieldName());
          }
        }
        this.ws();
        this.expect(']', fields === '*' ? "']'" : "',' or ']'");
      } else this.pos = mark;
      this.ws();
      const refsets = this.focus();
      const memberFilters: MemberFilter[][] = [];
      for (;;) {
        const m = this.pos;
        this.ws();
        if (this.src.startsWith('{{', this.pos) && this.blockMarker(this.pos) === 'm') memberFilters.push(this.memberFilterBlock());
        else {
          this.pos = m;
          break;
        }
      }
      node = { type: 'memberOf', pos: memberPos, refsets, memberFilters, ...(fields ? { fields } : {}) };
    } else node = this.focus();
    if (operator) node = { type: 'hierarchy', pos: start, operator, operand: node };
    for (;;) {
      const m = this.pos;
      this.ws();
      if (!this.src.startsWith('{{', this.pos)) {
        this.pos = m;
        break;
      }
      const marker = this.blockMarker(this.pos);
      if (marker === 'm') this.fail("a description filter, a concept filter or a history supplement ('{{ M … }}' follows '^ refset' directly)", this.pos);
      if (marker === '+') {
        node = this.history(node, start);
        break;
      }
      node = { type: 'filtered', pos: start, focus: node, filter: marker === 'c' ? this.conceptFilterBlock() : this.descriptionFilterBlock() };
    }
    this.leave();
    return node;
  }

  /** eclFocusConcept or `( expressionConstraint )`. */
  private focus(): Expression {
    const c = this.ch();
    if (c === '(') {
      this.pos++;
      this.ws();
      this.enter();
      const e = this.expression();
      this.leave();
      this.ws();
      if (this.ch() !== ')') this.fail(e.type === 'and' || e.type === 'or' || e.type === 'minus' || e.type === 'refined' || e.type === 'dotted' ? "')'" : "':', '.', AND, OR, MINUS or ')'");
      this.pos++;
      return e;
    }
    if (c === '*') {
      this.pos++;
      return { type: 'any', pos: this.pos - 1 };
    }
    if (isDigit(c)) return this.conceptReference();
    if (c === '"' || isAlpha(c)) {
      const alt = this.alternateIdentifier();
      if (alt) return alt;
    }
    return this.fail("a concept reference, '(' or '*'");
  }

  private conceptReference(): ConceptReference {
    const start = this.pos;
    const sctid = this.sctId('a concept reference');
    const term = this.optionalTerm();
    return term === undefined ? { type: 'concept', pos: start, sctid } : { type: 'concept', pos: start, sctid, term };
  }

  /** sctId: 6 to 18 digits, the first not 0. */
  private sctId(what: string): string {
    const start = this.pos;
    if (!isDigit(this.ch()) || this.ch() === '0') this.fail(`${what} (an SCTID: 6 to 18 digits, not starting with 0)`);
    while (isDigit(this.ch())) this.pos++;
    const len = this.pos - start;
    if (len < 6 || len > 18) this.fail(`${what} (an SCTID: 6 to 18 digits, not starting with 0)`, start);
    return this.src.slice(start, this.pos);
  }

  /** `ws "|" ws term ws "|"`, if present. */
  private optionalTerm(): string | undefined {
    const mark = this.pos;
    this.ws();
    if (this.ch() !== '|') {
      this.pos = mark;
      return undefined;
    }
    const open = this.pos;
    const close = this.src.indexOf('|', open + 1);
    if (close < 0) this.fail("'|' closing the term", this.src.length);
    const term = this.src.slice(open + 1, close).trim();
    if (!term) this.fail('a term between the bars', open + 1);
    this.pos = close + 1;
    return term;
  }

  /** `scheme#code` or `"scheme#code"`; undefined (nothing consumed) when the text is not one. */
  private alternateIdentifier(): Expression | undefined {
    const start = this.pos;
    const quoted = this.ch() === '"';
    let p = quoted ? start + 1 : start;
    if (!isAlpha(this.src[p] ?? '')) return undefined;
    while (/[A-Za-z0-9-]/.test(this.src[p] ?? '')) p++;
    if (this.src[p] !== '#') return undefined;
    const scheme = this.src.slice(quoted ? start + 1 : start, p);
    p++;
    const codeStart = p;
    if (quoted) {
      while (p < this.src.length && this.src[p] !== '"' && this.src[p] !== '\\') p++;
      if (this.src[p] !== '"') {
        this.pos = p;
        this.fail("'\"' closing the alternate identifier");
      }
    } else while (/[A-Za-z0-9._-]/.test(this.src[p] ?? '')) p++;
    const code = this.src.slice(codeStart, p);
    if (!code) {
      this.pos = p;
      this.fail('an alternate identifier code');
    }
    this.pos = quoted ? p + 1 : p;
    const term = this.optionalTerm();
    return { type: 'alternateIdentifier', pos: start, scheme, code, ...(term === undefined ? {} : { term }) };
  }

  private fieldName(): string {
    const w = this.word();
    if (!w) this.fail("a refset field name or '*'");
    this.pos += w.length;
    return w;
  }

  // ---- refinements ---------------------------------------------------------------------------

  /** eclRefinement: sub-refinements joined by one operator (attribute sets bind first). */
  private refinement(): Refinement {
    this.enter();
    const start = this.pos;
    const operands: Refinement[] = [this.subRefinement()];
    let kind: 'and' | 'or' | undefined;
    for (;;) {
      const mark = this.pos;
      this.ws();
      const op = this.logical();
      if (!op || op.kind === 'minus') {
        this.pos = mark;
        break;
      }
      if (kind && op.kind !== kind) throw new EclSyntaxError(op.pos, `expected parentheses: AND and OR cannot be mixed at ${op.pos}`);
      kind = op.kind;
      this.pos += op.len;
      this.ws();
      operands.push(this.subRefinement());
    }
    this.leave();
    if (operands.length === 1) return operands[0];
    return { type: kind === 'or' ? 'refinementOr' : 'refinementAnd', pos: start, operands };
  }

  private subRefinement(): Refinement {
    if (this.groupStartsAt(this.pos)) return this.group();
    return this.attributeSet(false);
  }

  /** eclAttributeSet: attributes (or parenthesised sets) joined by one operator. */
  private attributeSet(inGroup: boolean): Refinement {
    this.enter();
    const start = this.pos;
    const operands: Refinement[] = [this.subAttributeSet(inGroup)];
    let kind: 'and' | 'or' | undefined;
    for (;;) {
      const mark = this.pos;
      this.ws();
      const op = this.logical();
      if (!op || op.kind === 'minus') {
        this.pos = mark;
        break;
      }
      if (kind && op.kind !== kind) {
        if (inGroup) throw new EclSyntaxError(op.pos, `expected parentheses: AND and OR cannot be mixed at ${op.pos}`);
        this.pos = mark;
        break;
      }
      this.pos += op.len;
      this.ws();
      if (!inGroup && this.groupStartsAt(this.pos)) {
        this.pos = mark;
        break;
      }
      kind = op.kind;
      operands.push(this.subAttributeSet(inGroup));
    }
    this.leave();
    if (operands.length === 1) return operands[0];
    return { type: kind === 'or' ? 'refinementOr' : 'refinementAnd', pos: start, operands };
  }

  private subAttributeSet(inGroup: boolean): Refinement {
    if (this.ch() === '(' && !this.parenthesisedAttributeName()) {
      this.pos++;
      this.ws();
      const inner = inGroup ? this.attributeSet(true) : this.refinement();
      this.ws();
      this.expect(')', "AND, OR, ',' or ')'");
      return inner;
    }
    return this.attribute();
  }

  /** Whether `[n..m] {` or `{` (a group) starts at `at`. */
  private groupStartsAt(at: number): boolean {
    if (this.src[at] === '{') return this.src[at + 1] !== '{';
    if (this.src[at] !== '[') return false;
    const m = /\[(?:0|[1-9][0-9]*)\.\.(?:0|[1-9][0-9]*|\*)\]/y;
    m.lastIndex = at;
    if (!m.test(this.src)) return false;
    const save = this.pos;
    this.pos = m.lastIndex;
    this.ws();
    const group = this.ch() === '{' && this.ch(1) !== '{';
    this.pos = save;
    return group;
  }

  /**
   * At `(`: whether it opens an attribute name (`( << X MINUS Y ) = *`) rather than a nested
   * refinement: after the matching `)` comes a comparison operator or a filter.
   */
  private parenthesisedAttributeName(): boolean {
    let depth = 0;
    let p = this.pos;
    const s = this.src;
    while (p < s.length) {
      const c = s[p];
      if (c === '"') {
        p++;
        while (p < s.length && s[p] !== '"') p += s[p] === '\\' ? 2 : 1;
      } else if (c === '|') {
        const close = s.indexOf('|', p + 1);
        if (close < 0) return false;
        p = close;
      } else if (c === '/' && s[p + 1] === '*') {
        const close = s.indexOf('*/', p + 2);
        if (close < 0) return false;
        p = close + 1;
      } else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) break;
      p++;
    }
    if (p >= s.length) return false;
    const save = this.pos;
    this.pos = p + 1;
    this.ws();
    const next = this.ch();
    const name = next === '=' || next === '!' || next === '<' || next === '>' || this.src.startsWith('{{', this.pos);
    this.pos = save;
    return name;
  }

  private group(): AttributeGroup {
    const start = this.pos;
    const cardinality = this.ch() === '[' ? this.cardinality() : undefined;
    this.ws();
    this.expect('{', "'{'");
    this.ws();
    const attributes = this.attributeSet(true);
    this.ws();
    this.expect('}', "AND, OR, ',' or '}'");
    return { type: 'group', pos: start, attributes, ...(cardinality ? { cardinality } : {}) };
  }

  private cardinality(): Cardinality {
    this.expect('[');
    const min = this.nonNegativeInteger('a minimum cardinality (a whole number)');
    this.expect('..', "'..'");
    let max: number | undefined;
    if (this.ch() === '*') this.pos++;
    else {
      const at = this.pos;
      max = this.nonNegativeInteger("a maximum cardinality (a whole number or '*')");
      if (max < min) throw new EclSyntaxError(at, `expected a maximum cardinality not below the minimum at ${at}`);
    }
    this.expect(']', "']'");
    return max === undefined ? { min } : { min, max };
  }

  private nonNegativeInteger(what: string): number {
    const start = this.pos;
    if (this.ch() === '0') this.pos++;
    else if (isDigit(this.ch())) while (isDigit(this.ch())) this.pos++;
    else this.fail(what);
    if (this.pos - start > 9) this.fail(`${what} below 1000000000`, start);
    return Number(this.src.slice(start, this.pos));
  }

  private attribute(): Attribute {
    const start = this.pos;
    let cardinality: Cardinality | undefined;
    if (this.ch() === '[') {
      cardinality = this.cardinality();
      this.ws();
    }
    let reverse = false;
    const c = this.ch();
    if ((c === 'R' || c === 'r') && !/^[A-Za-z][A-Za-z0-9-]*#/.test(this.src.slice(this.pos, this.pos + 200))) {
      reverse = true;
      this.pos++;
      this.ws();
    }
    const name = this.sub();
    this.ws();
    const operator = this.comparison();
    if (!operator) this.fail("a comparison operator ('=', '!=', '<', '<=', '>' or '>=')");
    this.ws();
    const value = this.attributeValue(operator);
    return { type: 'attribute', pos: start, reverse, name, value, ...(cardinality ? { cardinality } : {}) };
  }

  private comparison(): ComparisonOperator | undefined {
    for (const op of ['!=', '<=', '>=', '=', '<', '>'] as const) {
      if (this.src.startsWith(op, this.pos)) {
        this.pos += op.length;
        return op;
      }
    }
    return undefined;
  }

  private attributeValue(operator: ComparisonOperator): AttributeValue {
    if (this.ch() === '#') {
      this.pos++;
      const { value, text } = this.numericValue();
      return { kind: 'number', operator, value, text };
    }
    const eqNe = operator === '=' || operator === '!=';
    if (!eqNe) this.fail("'#' and a number after '<', '<=', '>' or '>='");
    if (this.searchTermAhead()) return { kind: 'string', operator, value: this.searchTerms() };
    const bool = this.booleanAhead();
    if (bool !== undefined) return { kind: 'boolean', operator, value: bool };
    return { kind: 'expression', operator, value: this.sub() };
  }

  /** true/false as a whole word at the position (consumed), else undefined. */
  private booleanAhead(): boolean | undefined {
    for (const [w, v] of [
      ['true', true],
      ['false', false],
    ] as const) {
      if (this.atKeyword(w) && !/[A-Za-z0-9#-]/.test(this.ch(w.length))) {
        this.pos += w.length;
        return v;
      }
    }
    return undefined;
  }

  private numericValue(): { value: number; text: string } {
    const start = this.pos;
    if (this.ch() === '-' || this.ch() === '+') this.pos++;
    if (this.ch() === '0') this.pos++;
    else if (isDigit(this.ch())) while (isDigit(this.ch())) this.pos++;
    else this.fail('a number');
    if (this.ch() === '.') {
      this.pos++;
      if (!isDigit(this.ch())) this.fail('a digit after the decimal point');
      while (isDigit(this.ch())) this.pos++;
    }
    const text = this.src.slice(start, this.pos);
    return { value: Number(text), text };
  }

  // ---- search terms --------------------------------------------------------------------------

  /** Whether a typed search term or a set of them starts here. */
  private searchTermAhead(): boolean {
    const save = this.pos;
    let p = this.pos;
    if (this.src[p] === '(') {
      this.pos = p + 1;
      this.ws();
      p = this.pos;
    }
    this.pos = save;
    const c = this.src[p];
    if (c === '"') return true;
    for (const w of ['match', 'wild']) {
      if (this.atKeyword(w, p)) {
        this.pos = p + w.length;
        this.ws();
        const colon = this.ch() === ':';
        this.pos = save;
        if (colon) return true;
      }
    }
    return false;
  }

  /** typedSearchTerm or typedSearchTermSet. */
  private searchTerms(): SearchTerm[] {
    if (this.ch() !== '(') return [this.searchTerm()];
    this.pos++;
    this.ws();
    const terms = [this.searchTerm()];
    for (;;) {
      const hadWs = this.ws();
      if (this.ch() === ')') {
        this.pos++;
        return terms;
      }
      if (!hadWs) this.fail("whitespace or ')'");
      terms.push(this.searchTerm());
    }
  }

  private searchTerm(): SearchTerm {
    let mode: 'match' | 'wild' = 'match';
    let keyword = false;
    for (const w of ['match', 'wild'] as const) {
      if (this.atKeyword(w)) {
        const save = this.pos;
        this.pos += w.length;
        this.ws();
        if (this.ch() === ':') {
          this.pos++;
          this.ws();
          mode = w;
          keyword = true;
          break;
        }
        this.pos = save;
      }
    }
    if (this.ch() !== '"') this.fail('a search term (\'"…"\', \'match:"…"\' or \'wild:"…"\')');
    const open = this.pos;
    this.pos++;
    let raw = '';
    let unescaped = '';
    const segments: string[] = [];
    let segment = '';
    for (;;) {
      const c = this.ch();
      if (c === '') this.fail("'\"' closing the search term", this.src.length);
      if (c === '"') break;
      if (c === '\\') {
        const n = this.ch(1);
        if (n === '"' || n === '\\' || (mode === 'wild' && n === '*')) {
          raw += c + n;
          unescaped += n;
          segment += n;
          this.pos += 2;
          continue;
        }
        this.fail(mode === 'wild' ? "'\\\"', '\\\\' or '\\*'" : "'\\\"' or '\\\\'");
      }
      if (mode === 'wild' && c === '*') {
        segments.push(segment);
        segment = '';
      } else segment += c;
      raw += c;
      unescaped += c;
      this.pos++;
    }
    this.pos++;
    if (mode === 'wild') {
      if (!raw) this.fail('a search term between the quotes', open + 1);
      segments.push(segment);
      return { mode: 'wild', text: raw, segments };
    }
    const words = unescaped.split(/[ \t\r\n]+/).filter((w) => w !== '');
    if (!words.length) this.fail('a search term between the quotes', open + 1);
    return { mode: 'match', keyword, text: raw, words };
  }

  // ---- filters -------------------------------------------------------------------------------

  /**
   * The kind of the `{{ … }}` block at `at`: 'm', 'c', 'd' (explicit or the default), '+'.
   * The letter is a marker only when it is not the start of a filter keyword (`dialect`).
   */
  private blockMarker(at: number): 'm' | 'c' | 'd' | '+' {
    const save = this.pos;
    this.pos = at + 2;
    this.ws();
    const c = this.ch();
    const w = this.word().toLowerCase();
    this.pos = save;
    if (c === '+') return '+';
    if (w === 'm' || w === 'c' || w === 'd') return w;
    if (w[0] === 'c' && CONCEPT_KEYWORDS.has(w.slice(1))) return 'c';
    if (w[0] === 'd' && DESCRIPTION_KEYWORDS.has(w.slice(1)) && !DESCRIPTION_KEYWORDS.has(w)) return 'd';
    return 'd';
  }

  /** Consumes `{{ ws [letter] ws` (the letter when it is the block's marker). */
  private openBlock(marker: 'm' | 'c' | 'd'): void {
    this.pos += 2;
    this.ws();
    const w = this.word().toLowerCase();
    if (w === marker) {
      this.pos++;
      this.ws();
    } else if (w[0] === marker && w.length > 1) {
      const rest = w.slice(1);
      if ((marker === 'c' && CONCEPT_KEYWORDS.has(rest)) || (marker === 'd' && DESCRIPTION_KEYWORDS.has(rest) && !DESCRIPTION_KEYWORDS.has(w))) this.pos++;
    }
  }

  private closeBlock(): void {
    this.ws();
    this.expect('}}', "',' or '}}'");
  }

  private filterList<T>(one: () => T): T[] {
    const list = [one()];
    for (;;) {
      const mark = this.pos;
      this.ws();
      if (this.ch() !== ',') {
        this.pos = mark;
        break;
      }
      this.pos++;
      this.ws();
      list.push(one());
    }
    this.closeBlock();
    return list;
  }

  private descriptionFilterBlock(): { kind: 'description'; filters: DescriptionFilter[] } {
    this.openBlock('d');
    return { kind: 'description', filters: this.filterList(() => this.descriptionFilter()) };
  }

  private conceptFilterBlock(): { kind: 'concept'; filters: ConceptFilter[] } {
    this.openBlock('c');
    return { kind: 'concept', filters: this.filterList(() => this.conceptFilter()) };
  }

  private memberFilterBlock(): MemberFilter[] {
    this.pos += 2;
    this.ws();
    this.pos++; // the M
    this.ws();
    return this.filterList(() => this.memberFilter());
  }

  private eqNe(): '=' | '!=' {
    if (this.src.startsWith('!=', this.pos)) {
      this.pos += 2;
      return '!=';
    }
    if (this.ch() === '=') {
      this.pos++;
      return '=';
    }
    return this.fail("'=' or '!='");
  }

  /** Reads a filter keyword: `word` letters; the caller matches it. */
  private keyword(): { word: string; pos: number } {
    const pos = this.pos;
    const word = this.word();
    this.pos += word.length;
    this.ws();
    return { word: word.toLowerCase(), pos };
  }

  private descriptionFilter(): DescriptionFilter {
    const { word, pos } = this.keyword();
    switch (word) {
      case 'term': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'term', pos, operator, terms: this.searchTerms() };
      }
      case 'language': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'language', pos, operator, codes: this.tokenSet(() => this.languageCode()) };
      }
      case 'typeid': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'typeId', pos, operator, value: this.conceptSetOrSub() };
      }
      case 'type': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'typeToken', pos, operator, tokens: this.tokenSet(() => this.token(['syn', 'fsn', 'def'], "'syn', 'fsn' or 'def'")) };
      }
      case 'dialectid':
      case 'dialect':
        return this.dialectFilter(word, pos);
      case 'moduleid':
      case 'effectivetime':
      case 'active':
        return this.sharedFilter(word, pos);
      case 'id': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'id', pos, operator, ids: this.tokenSet(() => this.sctId('a description id')) };
      }
      default:
        return this.fail('a description filter (term, language, type, typeId, dialect, dialectId, moduleId, effectiveTime, active or id)', pos);
    }
  }

  private conceptFilter(): ConceptFilter {
    const { word, pos } = this.keyword();
    switch (word) {
      case 'definitionstatusid': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'definitionStatusId', pos, operator, value: this.conceptSetOrSub() };
      }
      case 'definitionstatus': {
        const operator = this.eqNe();
        this.ws();
        return { type: 'definitionStatusToken', pos, operator, tokens: this.tokenSet(() => this.token(['primitive', 'defined'], "'primitive' or 'defined'")) };
      }
      case 'moduleid':
      case 'effectivetime':
      case 'active':
        return this.sharedFilter(word, pos);
      default:
        return this.fail('a concept filter (definitionStatus, definitionStatusId, moduleId, effectiveTime or active)', pos);
    }
  }

  private memberFilter(): MemberFilter {
    const start = this.pos;
    const w = this.word().toLowerCase();
    if (w === 'moduleid' || w === 'effectivetime' || w === 'active') {
      const { word, pos } = this.keyword();
      return this.sharedFilter(word, pos);
    }
    if (!w) this.fail('a member filter (moduleId, effectiveTime, active or a refset field name)');
    const field = this.word();
    this.pos += field.length;
    this.ws();
    const operator = this.comparison();
    if (!operator) this.fail("a comparison operator ('=', '!=', '<', '<=', '>' or '>=')");
    this.ws();
    let value: MemberFieldValue;
    const eqNe = operator === '=' || operator === '!=';
    if (this.ch() === '#') {
      this.pos++;
      value = { kind: 'number', value: this.numericValue().value };
    } else if (!eqNe && (this.ch() === '"' || this.ch() === '(')) value = { kind: 'time', value: this.tokenSet(() => this.timeValue()) };
    else if (!eqNe) this.fail("'#' and a number, or a time, after '<', '<=', '>' or '>='");
    else if (this.searchTermAhead()) value = { kind: 'string', value: this.searchTerms() };
    else {
      const bool = this.booleanAhead();
      value = bool === undefined ? { kind: 'expression', value: this.sub() } : { kind: 'boolean', value: bool };
    }
    return { type: 'field', pos: start, field, operator, value };
  }

  /** moduleId, effectiveTime and active: the same in description, concept and member filters. */
  private sharedFilter(word: string, pos: number): DescriptionFilter & ConceptFilter & MemberFilter {
    if (word === 'moduleid') {
      const operator = this.eqNe();
      this.ws();
      return { type: 'module', pos, operator, value: this.conceptSetOrSub() };
    }
    if (word === 'effectivetime') {
      const operator = this.comparison();
      if (!operator) this.fail("a comparison operator ('=', '!=', '<', '<=', '>' or '>=')");
      this.ws();
      const f: EffectiveTimeFilter = { type: 'effectiveTime', pos, operator, times: this.tokenSet(() => this.timeValue()) };
      return f;
    }
    const operator = this.eqNe();
    this.ws();
    const at = this.pos;
    let value: boolean;
    if (this.ch() === '1' || this.ch() === '0') {
      value = this.ch() === '1';
      this.pos++;
    } else {
      const b = this.booleanAhead();
      if (b === undefined) this.fail("'1', '0', 'true' or 'false'", at);
      value = b;
    }
    return { type: 'active', pos, operator, value };
  }

  /** One item, or `( item item … )` separated by whitespace. */
  private tokenSet<T>(one: () => T): T[] {
    if (this.ch() !== '(') return [one()];
    this.pos++;
    this.ws();
    const list = [one()];
    for (;;) {
      const hadWs = this.ws();
      if (this.ch() === ')') {
        this.pos++;
        return list;
      }
      if (!hadWs) this.fail("whitespace or ')'");
      list.push(one());
    }
  }

  private token<T extends string>(tokens: readonly T[], what: string): T {
    const w = this.word().toLowerCase();
    const t = tokens.find((x) => x === w);
    if (!t) this.fail(what);
    this.pos += w.length;
    return t;
  }

  private languageCode(): string {
    const w = this.word();
    if (w.length !== 2) this.fail('a two-letter language code');
    this.pos += 2;
    return w.toLowerCase();
  }

  /** `"yyyymmdd"` (or `""`): the time as a number, 0 for the empty time. */
  private timeValue(): number {
    const start = this.pos;
    if (this.ch() !== '"') this.fail('a time (\'"yyyymmdd"\')');
    this.pos++;
    if (this.ch() === '"') {
      this.pos++;
      return 0;
    }
    const m = /([1-9][0-9]{3})(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])"/y;
    m.lastIndex = this.pos;
    if (!m.test(this.src)) this.fail('a time (\'"yyyymmdd"\')', start);
    const value = Number(this.src.slice(this.pos, this.pos + 8));
    this.pos += 9;
    return value;
  }

  /** eclConceptReferenceSet (two or more) or a subExpressionConstraint. */
  private conceptSetOrSub(): ConceptSetOperand {
    if (this.ch() === '(') {
      const save = this.pos;
      try {
        this.pos++;
        this.ws();
        const concepts = [this.conceptReference()];
        for (;;) {
          const hadWs = this.ws();
          if (this.ch() === ')') break;
          if (!hadWs) this.fail("whitespace or ')'");
          concepts.push(this.conceptReference());
        }
        this.pos++;
        if (concepts.length >= 2) return { kind: 'set', concepts };
      } catch (e) {
        if (!(e instanceof EclSyntaxError)) throw e;
      }
      this.pos = save;
    }
    return { kind: 'expression', value: this.sub() };
  }

  private dialectFilter(word: string, pos: number): DescriptionFilter {
    const operator = this.eqNe();
    this.ws();
    const dialects: DialectEntry[] = [];
    let expression: Expression | undefined;
    if (word === 'dialect') {
      const one = (): DialectEntry => {
        const alias = this.dialectAlias();
        const acc = this.optionalAcceptability();
        return acc ? { alias, acceptability: acc } : { alias };
      };
      dialects.push(...this.tokenSet(one));
    } else {
      let set = false;
      if (this.ch() === '(') {
        const save = this.pos;
        try {
          const one = (): DialectEntry => {
            const concept = this.conceptReference();
            const acc = this.optionalAcceptability();
            return acc ? { concept, acceptability: acc } : { concept };
          };
          dialects.push(...this.tokenSet(one));
          set = true;
        } catch (e) {
          if (!(e instanceof EclSyntaxError)) throw e;
          dialects.length = 0;
          this.pos = save;
        }
      }
      if (!set) expression = this.sub();
    }
    const acceptability = this.optionalAcceptability();
    return { type: 'dialect', pos, operator, dialects, ...(expression ? { expression } : {}), ...(acceptability ? { acceptability } : {}) };
  }

  private dialectAlias(): string {
    const start = this.pos;
    if (!isAlpha(this.ch())) this.fail('a dialect alias (such as en-gb)');
    while (/[A-Za-z0-9-]/.test(this.ch())) this.pos++;
    return this.src.slice(start, this.pos).toLowerCase();
  }

  /** `ws ( prefer accept )` or `ws ( <concept> … )`, if present. */
  private optionalAcceptability(): Acceptability | undefined {
    const mark = this.pos;
    this.ws();
    if (this.ch() !== '(') {
      this.pos = mark;
      return undefined;
    }
    const save = this.pos;
    this.pos++;
    this.ws();
    if (isDigit(this.ch())) {
      this.pos = save;
      return { kind: 'concepts', concepts: this.tokenSet(() => this.conceptReference()) };
    }
    if (!isAlpha(this.ch())) {
      this.pos = mark;
      return undefined;
    }
    this.pos = save;
    return { kind: 'tokens', tokens: this.tokenSet(() => this.token(['accept', 'prefer'], "'accept' or 'prefer'")) };
  }

  private history(focus: Expression, start: number): Expression {
    this.pos += 2;
    this.ws();
    this.expect('+', "'+'");
    this.ws();
    if (!this.atKeyword('history')) this.fail("'HISTORY'");
    this.pos += 7;
    let node: Expression = { type: 'history', pos: start, focus };
    const c = this.ch();
    if ((c === '-' || c === '_') && isAlpha(this.ch(1))) {
      this.pos++;
      const w = this.word().toLowerCase();
      if (w !== 'min' && w !== 'mod' && w !== 'max') this.fail("'MIN', 'MOD' or 'MAX'");
      this.pos += 3;
      node = { type: 'history', pos: start, focus, profile: w };
    } else {
      const mark = this.pos;
      this.ws();
      if (this.ch() === '(') {
        this.pos++;
        this.ws();
        this.enter();
        const subset = this.expression();
        this.leave();
        this.ws();
        this.expect(')', "')'");
        node = { type: 'history', pos: start, focus, subset };
      } else this.pos = mark;
    }
    this.ws();
    this.expect('}}', "'}}'");
    return node;
  }
}
