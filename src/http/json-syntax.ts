import { MAX_JSON_DEPTH } from '../fhir/json.js';

/**
 * A tolerant reading of JSON text that lists every problem it finds, with its line and column,
 * where `JSON.parse` stops at the first: syntax errors (it resynchronises and reads on) and the
 * duplicate property names `JSON.parse` silently resolves to the last one. One linear pass; the
 * nesting is bounded by the caller (json-body.ts refuses deeper text before this runs).
 */

export interface JsonProblem {
  line: number;
  column: number;
  text: string;
}

/** Most problems listed for one text (the last one says the reading stopped). */
export const MAX_JSON_PROBLEMS = 50;
/** Deepest nesting read (as the JSON body limit, MAX_JSON_DEPTH). */
const MAX_NESTING = MAX_JSON_DEPTH;

type TokenKind = '{' | '}' | '[' | ']' | ':' | ',' | 'string' | 'scalar' | 'bad' | 'eof';

interface Token {
  kind: TokenKind;
  start: number;
  /** The decoded value of a string token. */
  value?: string;
}

const LITERAL = /^(?:true|false|null)$/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

class Reader {
  readonly problems: JsonProblem[] = [];
  private pos = 0;
  private token: Token;
  // The line of the last position asked for; positions are asked for in increasing order.
  private lineNo = 1;
  private lineStart = 0;
  private lineScan = 0;

  constructor(private readonly text: string) {
    this.token = this.lex();
  }

  /** Open objects and arrays; past MAX_NESTING the reading stops (no deep recursion). */
  depth = 0;
  stopped = false;

  get full(): boolean {
    return this.stopped || this.problems.length >= MAX_JSON_PROBLEMS;
  }

  report(at: number, text: string): void {
    if (this.full) return;
    for (; this.lineScan < at && this.lineScan < this.text.length; this.lineScan++) {
      if (this.text.charCodeAt(this.lineScan) === 10) {
        this.lineNo++;
        this.lineStart = this.lineScan + 1;
      }
    }
    const problem = { line: this.lineNo, column: at - this.lineStart + 1, text };
    if (this.problems.length === MAX_JSON_PROBLEMS - 1) problem.text = `Too many problems: reading stopped after ${MAX_JSON_PROBLEMS - 1}`;
    this.problems.push(problem);
  }

  peek(): Token {
    return this.token;
  }

  next(): Token {
    const current = this.token;
    this.token = this.lex();
    return current;
  }

  /** The next token; lexical problems (bad numbers, strings, words) are reported here. */
  private lex(): Token {
    const text = this.text;
    while (this.pos < text.length && ' \t\r\n'.includes(text[this.pos])) this.pos++;
    const start = this.pos;
    if (start >= text.length) return { kind: 'eof', start };
    const c = text[start];
    if ('{}[]:,'.includes(c)) {
      this.pos++;
      return { kind: c as TokenKind, start };
    }
    if (c === '"') return this.lexString(start);
    // A word: everything up to the next delimiter.
    let end = start;
    while (end < text.length && !' \t\r\n{}[]:,"'.includes(text[end])) end++;
    if (end === start) end++;
    this.pos = end;
    const word = text.slice(start, end);
    if (LITERAL.test(word) || NUMBER.test(word)) return { kind: 'scalar', start };
    if (/^-?\d/.test(word)) {
      const why = /^-?0\d/.test(word) ? 'numbers must not have leading zeros' : 'not a JSON number';
      this.report(start, `Invalid number '${clip(word)}': ${why}`);
      return { kind: 'scalar', start };
    }
    this.report(start, `Unexpected '${clip(word)}': expected a string, number, object, array, true, false or null`);
    return { kind: 'bad', start };
  }

  private lexString(start: number): Token {
    const text = this.text;
    let i = start + 1;
    let value = '';
    let chunk = i;
    for (; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch === 0x22) break;
      if (ch === 0x0a) {
        // A string cannot span lines: report it unterminated and resume on the next line.
        this.report(start, 'Unterminated string');
        this.pos = i;
        return { kind: 'string', start, value: value + text.slice(chunk, i) };
      }
      if (ch < 0x20) this.report(i, 'Control character in a string: escape it');
      else if (ch === 0x5c) {
        value += text.slice(chunk, i);
        const esc = text[i + 1];
        if (esc === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          value += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 5;
        } else if (esc !== undefined && '"\\/bfnrt'.includes(esc)) {
          value += esc;
          i += 1;
        } else {
          this.report(i, `Invalid escape '\\${esc ?? ''}' in a string`);
          i += esc === undefined ? 0 : 1;
        }
        chunk = i + 1;
      }
    }
    if (i >= text.length) {
      this.report(start, 'Unterminated string');
      this.pos = text.length;
      return { kind: 'string', start, value: value + text.slice(chunk) };
    }
    this.pos = i + 1;
    return { kind: 'string', start, value: value + text.slice(chunk, i) };
  }
}

/** Every problem of `text` as JSON (empty for valid JSON with unique property names). */
export function jsonProblems(text: string): JsonProblem[] {
  const reader = new Reader(text);
  readValue(reader);
  const rest = reader.peek();
  if (rest.kind !== 'eof' && !reader.full) reader.report(rest.start, 'Unexpected content after the end of the JSON value');
  return reader.problems;
}

function readValue(r: Reader): void {
  const t = r.peek();
  if (t.kind === '{' || t.kind === '[') {
    if (r.full) return;
    if (++r.depth > MAX_NESTING) {
      r.report(t.start, `Content is nested too deeply (more than ${MAX_NESTING} levels)`);
      r.stopped = true;
      return;
    }
    if (t.kind === '{') readObject(r);
    else readArray(r);
    r.depth--;
    return;
  }
  if (t.kind === 'string' || t.kind === 'scalar') {
    r.next();
    return;
  }
  if (t.kind === 'bad') {
    r.next(); // already reported by the lexer
    return;
  }
  r.report(t.start, t.kind === 'eof' ? 'Unexpected end of content: a value is missing' : `Unexpected '${t.kind}': expected a value`);
  // A stray ':' or ',' is skipped; a closing bracket is left to the container that owns it.
  if (t.kind === ':' || t.kind === ',') r.next();
}

function readObject(r: Reader): void {
  const open = r.next();
  const names = new Set<string>();
  if (r.peek().kind === '}') {
    r.next();
    return;
  }
  while (!r.full) {
    const key = r.peek();
    if (key.kind === 'eof') return r.report(open.start, "Unclosed object: '}' missing");
    if (key.kind === 'string') {
      r.next();
      const name = key.value as string;
      if (names.has(name)) r.report(key.start, `Duplicate property '${clip(name)}': a JSON object must not repeat a name`);
      names.add(name);
      if (r.peek().kind === ':') r.next();
      else r.report(r.peek().start, `Expected ':' after property name '${clip(name)}'`);
      readValue(r);
    } else if (key.kind === '}' || key.kind === ']') {
      r.report(key.start, `Expected a property name in quotes, found '${key.kind}'`);
    } else {
      r.report(key.start, 'Expected a property name in quotes');
      r.next();
      if (r.peek().kind === ':') r.next();
      readValue(r);
    }
    if (afterItem(r, open, '}', 'a property value')) return;
  }
}

function readArray(r: Reader): void {
  const open = r.next();
  if (r.peek().kind === ']') {
    r.next();
    return;
  }
  while (!r.full) {
    const before = r.peek();
    if (before.kind === 'eof') return r.report(open.start, "Unclosed array: ']' missing");
    readValue(r);
    if (afterItem(r, open, ']', 'an array item')) return;
    if (r.peek() === before) r.next(); // no progress: skip the token
  }
}

/**
 * What follows an item of an object (`close` `}`) or an array (`]`): a comma and more items
 * (false), or the end of the container (true) — also when it ends wrongly, which is reported.
 */
function afterItem(r: Reader, open: Token, close: '}' | ']', item: string): boolean {
  const other = close === '}' ? ']' : '}';
  const sep = r.peek();
  if (sep.kind === close) {
    r.next();
    return true;
  }
  if (sep.kind === ',') {
    r.next();
    if (r.peek().kind !== close) return false;
    r.report(sep.start, `Trailing comma before '${close}'`);
    r.next();
    return true;
  }
  if (sep.kind === 'eof') {
    r.report(open.start, `Unclosed ${close === '}' ? 'object' : 'array'}: '${close}' missing`);
    return true;
  }
  if (sep.kind === other) {
    r.report(sep.start, `Expected ',' or '${close}' but found '${other}'`);
    r.next();
    return true;
  }
  r.report(sep.start, `Expected ',' or '${close}' after ${item}`);
  return false;
}

function clip(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
