import type { StructureDefinition } from '@medplum/fhirtypes';
import { dataTypeDefinitionMap } from '../definitions.js';

/** Checks one JSON value against an R4 primitive type; returns a problem or undefined. */
export interface PrimitiveCheck {
  /** The FHIR primitive type name, e.g. `date`. */
  readonly type: string;
  /** Returns `undefined` when valid, else the issue code and message. */
  check(value: unknown): PrimitiveProblem | undefined;
}

/** A problem with a primitive value: `structure` = wrong JSON type, `value` = bad format or range. */
export interface PrimitiveProblem {
  readonly code: 'structure' | 'value';
  readonly text: string;
}

const REGEX_EXT = 'http://hl7.org/fhir/StructureDefinition/regex';
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Types whose JSON form is a number: the SD regexes describe the lexical form, which JSON.parse has already erased. */
const NUMBER_TYPES = new Set(['integer', 'positiveInt', 'unsignedInt', 'decimal']);
/**
 * Types checked only for being non-empty: the SD regex of string/markdown (`[ \r\n\t\S]+`)
 * rejects every Unicode space other than space/CR/LF/TAB (e.g. U+00A0), which real data carries.
 */
const NON_EMPTY_ONLY = new Set(['string', 'markdown', 'xhtml']);
const DATE_TYPES = new Set(['date', 'dateTime', 'instant']);

const cache = new Map<string, PrimitiveCheck | null>();

/** The checker for primitive type `type`, or undefined when `type` is not an R4 primitive. */
export function primitiveCheck(type: string): PrimitiveCheck | undefined {
  let result = cache.get(type);
  if (result === undefined) {
    // Every R4 primitive is a data type: found without parsing the resources' definitions.
    const sd = dataTypeDefinitionMap().get(type);
    result = sd?.kind === 'primitive-type' ? compile(type, sd) : null;
    cache.set(type, result);
  }
  return result ?? undefined;
}

function compile(type: string, sd: StructureDefinition): PrimitiveCheck {
  if (type === 'boolean') {
    return { type, check: (v) => (typeof v === 'boolean' ? undefined : wrongJsonType(type, 'a boolean', v)) };
  }
  if (NUMBER_TYPES.has(type)) return { type, check: (v) => checkNumber(type, v) };
  const regex = type === 'base64Binary' || NON_EMPTY_ONLY.has(type) ? undefined : sdRegex(sd);
  return { type, check: (v) => checkString(type, v, regex) };
}

/** The regex of the primitive's `value` element, anchored (the spec's regexes match whole values). */
function sdRegex(sd: StructureDefinition): RegExp | undefined {
  const value = sd.snapshot?.element?.find((e) => e.path === `${sd.type}.value`);
  const source = value?.type?.[0]?.extension?.find((x) => x.url === REGEX_EXT)?.valueString;
  return source ? new RegExp(`^(?:${source})$`) : undefined;
}

function checkNumber(type: string, v: unknown): PrimitiveProblem | undefined {
  if (typeof v !== 'number') return wrongJsonType(type, 'a number', v);
  if (!Number.isFinite(v)) return invalid(type, v);
  if (type === 'decimal') return undefined;
  if (!Number.isInteger(v)) return invalid(type, v, 'must be a whole number');
  const min = type === 'positiveInt' ? 1 : type === 'unsignedInt' ? 0 : INT32_MIN;
  if (v < min) return invalid(type, v, `must be at least ${min}`);
  if (v > INT32_MAX) return invalid(type, v, 'out of 32-bit integer range');
  return undefined;
}

function checkString(type: string, v: unknown, regex: RegExp | undefined): PrimitiveProblem | undefined {
  if (typeof v !== 'string') return wrongJsonType(type, 'a string', v);
  if (v.length === 0) return invalid(type, v, 'must not be empty');
  if (type === 'base64Binary') return isBase64(v) ? undefined : invalid(type, v);
  if (regex && !matches(type, regex, v)) return invalid(type, v, hint(type));
  if (DATE_TYPES.has(type) && !validDayOfMonth(v)) return invalid(type, v, 'no such day in that month');
  return undefined;
}

/**
 * Longest value tested with an SD regex: V8 backtracks through repeated groups such as the
 * oid's `(\.(0|[1-9][0-9]*))+` recursively and overflows its stack on multi-MB values.
 */
const MAX_REGEX_LENGTH = 4096;
/** Linear-time equivalents (the pattern finds a violation) for long values of the unbounded types. */
const LONG_VALUE_VIOLATION: Record<string, RegExp> = {
  code: /^\s|\s$|\s\s/, // = not `[^\s]+(\s[^\s]+)*`
  uri: /\s/, // = not `\S*`
  url: /\s/,
  canonical: /\s/,
};

/** Other types (id, uuid, oid, dates, times) have no valid value anywhere near that long. */
function matches(type: string, regex: RegExp, v: string): boolean {
  if (v.length <= MAX_REGEX_LENGTH) return regex.test(v);
  const violation = LONG_VALUE_VIOLATION[type];
  return violation ? !violation.test(v) : false;
}

/**
 * Linear-time equivalent of the spec regex `(\s*([0-9a-zA-Z\+/=]){4}\s*)+` (slightly more lenient:
 * whitespace may also split a 4-character group). The regex itself backtracks on multi-MB attachments.
 */
function isBase64(v: string): boolean {
  let count = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13 || c === 12) continue;
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 47 || c === 61;
    if (!ok) return false;
    count++;
  }
  return count > 0 && count % 4 === 0;
}

/** The regexes accept e.g. `2023-02-30`; reject days past the end of the month (Feb 29 only in leap years). */
function validDayOfMonth(v: string): boolean {
  if (v.length < 10) return true;
  const year = Number(v.slice(0, 4));
  const month = Number(v.slice(5, 7));
  const day = Number(v.slice(8, 10));
  if (day <= DAYS_IN_MONTH[month - 1] && !(month === 2 && day === 29)) return true;
  return month === 2 && day === 29 && (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0));
}

function hint(type: string): string | undefined {
  switch (type) {
    case 'code':
      return 'must not have leading, trailing or repeated whitespace';
    case 'id':
      return 'must be 1-64 characters of A-Z, a-z, 0-9, "-" and "."';
    case 'date':
      return 'expected YYYY, YYYY-MM or YYYY-MM-DD';
    case 'dateTime':
      return 'expected YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz';
    case 'instant':
      return 'expected YYYY-MM-DDThh:mm:ss(.sss)Z or with a +/-hh:mm offset';
    case 'time':
      return 'expected hh:mm:ss';
    case 'uuid':
      return 'expected urn:uuid: followed by a lowercase UUID';
    case 'oid':
      return 'expected urn:oid: followed by a dotted OID';
    case 'uri':
    case 'url':
    case 'canonical':
      return 'must not contain whitespace';
    default:
      return undefined;
  }
}

/** Shows a value in a message without echoing megabytes of it. */
export function describe(v: unknown): string {
  if (typeof v === 'string') return `'${v.length > 40 ? `${v.slice(0, 40)}…` : v}'`;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return 'null';
  return Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : typeof v;
}

/** The JSON kind of a value, for "expected X, got Y" messages. */
export function jsonKind(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function wrongJsonType(type: string, expected: string, v: unknown): PrimitiveProblem {
  return { code: 'structure', text: `Expected ${expected} (FHIR ${type}), got ${jsonKind(v)}` };
}

function invalid(type: string, v: unknown, why?: string): PrimitiveProblem {
  return { code: 'value', text: `Invalid ${type} value ${describe(v)}${why ? `: ${why}` : ''}` };
}
