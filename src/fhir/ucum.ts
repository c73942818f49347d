import ucum from '@lhncbc/ucum-lhc';
import { PrefixTables } from '@lhncbc/ucum-lhc/source-cjs/prefixTables.js';

/**
 * UCUM unit expressions (docs/terminology.md#ucum): whether an expression is valid, what it
 * reads as, its canonical unit, and the conversion of a quantity to canonical units. The
 * validation and the conversions are NLM's `@lhncbc/ucum-lhc` (which carries the UCUM
 * definitions); the annotations (`{…}`) are checked here and stand for 1. A leaf: the
 * terminology provider and the search code both use it.
 */

/** The outcome of checking one expression. */
export type UcumCheck =
  | {
      valid: true;
      /** The expression spelled out unit by unit, e.g. `(milligram) / (deciliter)`. */
      formal: string;
      /** The library's name of the expression, when the library lists the whole expression as a unit (e.g. `milligram per deciliter`). */
      name: string | undefined;
      /** The canonical unit (docs/terminology.md#ucum), undefined for arbitrary units (`[IU]`), which have none. */
      canonical: string | undefined;
    }
  | {
      valid: false;
      reason: string;
      /** Past the bounds on an expression's length or nesting (not parsed at all): a caller's 400 `too-costly`. */
      tooCostly?: true;
    };

/**
 * Bounds on one expression (docs/terminology.md#ucum), checked before anything parses it: the
 * parsers (the library's and the one here) recurse on parentheses and take time in proportion to
 * the expression, so a deeper or longer one is refused, never parsed — and is never a unit with
 * a canonical form (the search index keeps such a quantity without its canonical row).
 */
export const UCUM_MAX_LENGTH = 500;
export const UCUM_MAX_DEPTH = 20;

/** The base units, in the order a canonical unit lists them. */
const BASE_ORDER = ['m', 's', 'g', 'rad', 'K', 'C', 'cd'];
const MAX_CACHED = 10_000;
const cache = new Map<string, UcumCheck>();

/** Checks a UCUM expression (results are kept for the most recent 10,000 expressions). */
export function checkUcum(code: string): UcumCheck {
  let hit = cache.get(code);
  if (!hit) {
    hit = check(code);
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(code, hit);
  }
  return hit;
}

/**
 * A quantity in canonical units, for comparing quantities given in different units (search):
 * `toCanonical(5.4, 'mg')` → `{ value: 0.0054, unit: 'g' }`, `toCanonical(37, 'Cel')` →
 * `{ value: 310.15, unit: 'K' }`. Undefined when the unit is not valid UCUM, is arbitrary
 * (`[IU]`, no conversion exists), or is a special unit other than a temperature (logarithmic
 * units such as `dB` or `[pH]`).
 */
export function toCanonical(value: number, unit: string): { value: number; unit: string } | undefined {
  const checked = checkUcum(unit);
  if (!checked.valid || checked.canonical === undefined) return undefined;
  const r = utils().convertToBaseUnits(neutralAnnotations(unit).text, value);
  if (r.status !== 'succeeded' || r.magnitude === undefined || !r.unitToExp) return undefined;
  if (r.fromUnitIsSpecial && Object.keys(r.unitToExp).join() !== 'K') return undefined;
  return { value: r.magnitude, unit: canonicalOf(r.unitToExp) };
}

function utils() {
  return ucum.UcumLhcUtils.getInstance();
}

/** Why an expression is past the bounds (UCUM_MAX_LENGTH, UCUM_MAX_DEPTH), undefined when it is within them. */
export function ucumBeyondBounds(code: string): string | undefined {
  if (code.length > UCUM_MAX_LENGTH) return `The unit expression is ${code.length} characters long (at most ${UCUM_MAX_LENGTH})`;
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === '{') {
      const end = code.indexOf('}', i + 1);
      if (end < 0) break;
      i = end;
    } else if (c === '(') deepest = Math.max(deepest, ++depth);
    else if (c === ')') depth--;
  }
  return deepest > UCUM_MAX_DEPTH ? `The unit expression nests parentheses ${deepest} deep (at most ${UCUM_MAX_DEPTH})` : undefined;
}

function check(code: string): UcumCheck {
  if (code === '') return { valid: false, reason: 'No unit given' };
  const beyond = ucumBeyondBounds(code);
  if (beyond) return { valid: false, reason: beyond, tooCostly: true };
  const neutral = neutralAnnotations(code);
  if (neutral.error) return { valid: false, reason: neutral.error };
  const text = neutral.text;
  const result = utils().validateUnitString(text, false);
  // The library trims and corrects some input (a unit name for its code): only the exact
  // expression counts.
  if (result.status !== 'valid' || result.ucumCode !== text) {
    const said = result.msg.join(' ').split(text).join(code).replace(/\s+/g, ' ').trim();
    return { valid: false, reason: unknownUnitAt(code) ?? (said || `${code} is not a valid UCUM code.`) };
  }
  const base = utils().convertToBaseUnits(text, 1);
  const canonical = base.status === 'succeeded' && base.unitToExp ? canonicalOf(base.unitToExp) : undefined;
  const listed = ucum.UnitTables.getInstance().getUnitByCode(code);
  return { valid: true, formal: formalOf(code) ?? result.unit?.name ?? code, name: listed?.name_ || undefined, canonical };
}

/**
 * Annotations are any printable ASCII but braces (spaces included, as the reference server
 * accepts them); outside them only printable ASCII without spaces. Each annotation's text is
 * replaced by `a` for the library, whose own annotation rules are narrower.
 */
function neutralAnnotations(code: string): { text: string; error?: string } {
  let text = '';
  for (let i = 0; i < code.length; i++) {
    const c = code.charCodeAt(i);
    if (code[i] === '{') {
      const end = code.indexOf('}', i + 1);
      if (end < 0) return { text, error: `The annotation at character ${i + 1} is not closed` };
      const inner = code.slice(i + 1, end);
      if (/[^\x20-\x7e]|\{/.test(inner)) return { text, error: `The annotation at character ${i + 1} holds a character an annotation may not hold` };
      text += '{a}';
      i = end;
    } else if (code[i] === '}') {
      return { text, error: `Unexpected '}' at character ${i + 1}` };
    } else if (c <= 0x20 || c > 0x7e) {
      return { text, error: `Character ${i + 1} is not allowed in a unit (only printable ASCII, no spaces)` };
    } else {
      text += code[i];
    }
  }
  return { text };
}

/** `{m: -3, g: 1}` → `m-3.g`; no dimension → `1`. */
function canonicalOf(exponents: Record<string, number>): string {
  const parts = Object.entries(exponents)
    .filter(([, e]) => e !== 0)
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([u, e]) => (e === 1 ? u : `${u}${e}`));
  return parts.length > 0 ? parts.join('.') : '1';
}

const rank = (u: string) => {
  const i = BASE_ORDER.indexOf(u);
  return i < 0 ? BASE_ORDER.length : i;
};

// --- the spelled-out form ---------------------------------------------------------------------

/** Names the library gives some units that UCUM itself names otherwise. */
const UCUM_NAMES: Record<string, string> = { l: 'liter', L: 'liter', '%': 'percent', K: 'kelvin', A: 'ampère', '10*': 'the number ten for arbitrary powers', '10^': 'the number ten for arbitrary powers' };

/**
 * The expression spelled out: each unit as `(name)` (prefix and unit name, ` ^ n` for an
 * exponent), numbers as they are, `.` as ` * `, `/` as ` / `, parentheses kept, an annotation
 * as `1` (after a unit: ` * 1`). Undefined when the expression does not parse here (the caller
 * falls back to the library's name).
 */
function formalOf(code: string): string | undefined {
  const parser = new FormalParser(code);
  const out = parser.term();
  return out !== undefined && parser.done() ? out : undefined;
}

/** `The unit '<symbol>' is unknown at character <n>` for the first symbol that names no unit, if any. */
function unknownUnitAt(code: string): string | undefined {
  const parser = new FormalParser(code);
  parser.term();
  return parser.unknown ? `The unit '${parser.unknown.symbol}' is unknown at character ${parser.unknown.at + 1}` : undefined;
}

class FormalParser {
  private i = 0;
  /** The first run of unit characters that names no unit (where the parse stopped). */
  unknown: { symbol: string; at: number } | undefined;

  constructor(private readonly s: string) {}

  done(): boolean {
    return this.i === this.s.length;
  }

  /** term := ['/'] component (('.' | '/') component)* */
  term(): string | undefined {
    let out = '';
    if (this.s[this.i] === '/') {
      this.i++;
      out = '1 / ';
    }
    const first = this.component();
    if (first === undefined) return undefined;
    out += first;
    while (this.s[this.i] === '.' || this.s[this.i] === '/') {
      const op = this.s[this.i++] === '.' ? ' * ' : ' / ';
      const next = this.component();
      if (next === undefined) return undefined;
      out += op + next;
    }
    return out;
  }

  /** component := '(' term ')' | annotation | symbol [annotation] */
  private component(): string | undefined {
    const c = this.s[this.i];
    if (c === '(') {
      this.i++;
      const inner = this.term();
      if (inner === undefined || this.s[this.i] !== ')') return undefined;
      this.i++;
      return `(${inner})${this.annotation() ? ' * 1' : ''}`;
    }
    if (c === '{') return this.annotation() ? '1' : undefined;
    const symbol = this.symbol();
    if (symbol === undefined) return undefined;
    return symbol + (this.annotation() ? ' * 1' : '');
  }

  private annotation(): boolean {
    if (this.s[this.i] !== '{') return false;
    const end = this.s.indexOf('}', this.i);
    if (end < 0) return false;
    this.i = end + 1;
    return true;
  }

  /** A run of unit characters (square brackets taken whole): a number, or a unit with an optional exponent. */
  private symbol(): string | undefined {
    const start = this.i;
    while (this.i < this.s.length && !'./(){}'.includes(this.s[this.i])) {
      if (this.s[this.i] === '[') {
        const end = this.s.indexOf(']', this.i);
        if (end < 0) return undefined;
        this.i = end + 1;
      } else {
        this.i++;
      }
    }
    const run = this.s.slice(start, this.i);
    if (/^\d+$/.test(run)) return run;
    const whole = unitName(run);
    if (whole) return `(${whole})`;
    const m = /^(.*?)([+-]?\d+)$/.exec(run);
    const name = m ? unitName(m[1]) : undefined;
    if (name && m) return `(${name} ^ ${Number(m[2])})`;
    if (run) this.unknown = { symbol: run, at: start };
    return undefined;
  }
}

/** The name of a unit atom, with its prefix when it has one (only UCUM's own units, not the library's combinations). */
function unitName(atom: string): string | undefined {
  if (!atom) return undefined;
  const own = ucumUnit(atom);
  if (own) return nameOf(atom, own.name_);
  for (const k of [1, 2]) {
    const prefix = PrefixTables.getInstance().getPrefixByCode(atom.slice(0, k));
    const unit = prefix ? ucumUnit(atom.slice(k)) : undefined;
    if (prefix && (unit?.isMetric_ || unit?.isBase_)) return prefix.name_ + nameOf(atom.slice(k), unit.name_);
  }
  return undefined;
}

function ucumUnit(code: string) {
  utils();
  const unit = code ? ucum.UnitTables.getInstance().getUnitByCode(code) : undefined;
  return unit && unit.source_ === 'UCUM' ? unit : undefined;
}

/** The library's name without its qualifier (`second - time` → `second`), or UCUM's own where they differ. */
function nameOf(code: string, name: string): string {
  return UCUM_NAMES[code] ?? name.split(' - ')[0].trim();
}

/** The UCUM code system's canonical URL. */
export const UCUM_SYSTEM = 'http://unitsofmeasure.org';

/** A unit's conversion to its canonical unit: canonical value = value × factor + offset. */
export interface UcumConversion {
  unit: string;
  factor: number;
  offset: number;
}

const conversions = new Map<string, UcumConversion | null>();
/** Units whose conversion is remembered (a search index meets few distinct units). */
const MAX_CONVERSIONS = 10_000;

/** True when `ucumConversion(unit)` answers from memory (no parsing). */
export function ucumConversionKnown(unit: string): boolean {
  return conversions.has(conversionKey(unit));
}

/** Annotations (`{…}`) are unity: `mg{total}` and `mg{free}` convert alike and are remembered once. */
function conversionKey(unit: string): string {
  const neutral = neutralAnnotations(unit);
  return neutral.error ? unit : neutral.text;
}

/**
 * How `unit` converts to its canonical unit (search: docs/rest.md#quantity-search), or undefined
 * as for `toCanonical`. Every UCUM conversion is linear (temperatures have an offset), so two
 * conversions give it; the result is remembered per unit, which makes the search index's
 * per-quantity work a map lookup.
 */
export function ucumConversion(unit: string): UcumConversion | undefined {
  const key = conversionKey(unit);
  const known = conversions.get(key);
  if (known !== undefined) return known ?? undefined;
  const zero = toCanonical(0, unit);
  const one = toCanonical(1, unit);
  const found = zero && one && zero.unit === one.unit && one.value !== zero.value ? { unit: one.unit, factor: one.value - zero.value, offset: zero.value } : undefined;
  if (conversions.size >= MAX_CONVERSIONS) conversions.clear();
  conversions.set(key, found ?? null);
  return found;
}
