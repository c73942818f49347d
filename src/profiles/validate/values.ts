import type { ElementDefinition } from '@medplum/fhirtypes';
import { isObject } from '../../fhir/json.js';
import type { WalkContext } from './walk-context.js';

const PREFIXES = ['fixed', 'pattern', 'minValue', 'maxValue'] as const;
const valuesOf = new WeakMap<ElementDefinition, Map<string, unknown>>();

/** The `fixed[x]`, `pattern[x]`, `minValue[x]` or `maxValue[x]` value of an element definition, if any (read once per definition). */
export function prefixed(def: ElementDefinition, prefix: (typeof PREFIXES)[number]): unknown {
  let values = valuesOf.get(def);
  if (!values) {
    values = new Map();
    for (const key of Object.keys(def)) {
      const p = PREFIXES.find((x) => key.startsWith(x) && key.length > x.length && /[A-Z]/.test(key[x.length]));
      if (p) values.set(p, (def as unknown as Record<string, unknown>)[key]);
    }
    valuesOf.set(def, values);
  }
  return values.get(prefix);
}

/** Exact equality of JSON values (object key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return typeof a === 'number' && typeof b === 'string' ? String(a) === b : false;
}

/**
 * Does `value` carry everything `pattern` states? Objects: each pattern property matched;
 * arrays: each pattern item matched by some item of the value; primitives: equal.
 */
export function matchesPattern(value: unknown, pattern: unknown): boolean {
  if (Array.isArray(pattern)) {
    const items = Array.isArray(value) ? value : [value];
    return pattern.every((p) => items.some((v) => matchesPattern(v, p)));
  }
  if (isObject(pattern)) {
    if (!isObject(value)) return false;
    return Object.entries(pattern).every(([k, p]) => p === undefined || (value[k] !== undefined && matchesPattern(value[k], p)));
  }
  return jsonEqual(value, pattern);
}

/** fixed, pattern, maxLength, minValue/maxValue of one item. */
export function checkValue(ctx: WalkContext, def: ElementDefinition, value: unknown, expr: string): void {
  const fixed = prefixed(def, 'fixed');
  if (fixed !== undefined && !jsonEqual(value, fixed)) {
    ctx.add('error', 'value', `Value must be exactly ${show(fixed)} (fixed by the profile), got ${show(value)}`, expr);
  }
  const pattern = prefixed(def, 'pattern');
  if (pattern !== undefined && !matchesPattern(value, pattern)) {
    ctx.add('error', 'value', `Value must match the pattern ${show(pattern)} of the profile, got ${show(value)}`, expr);
  }
  if (typeof def.maxLength === 'number' && typeof value === 'string' && [...value].length > def.maxLength) {
    ctx.add('error', 'value', `Value is ${[...value].length} characters long; the profile allows at most ${def.maxLength}`, expr, 'Type_Specific_Checks_DT_String_Length');
  }
  const min = prefixed(def, 'minValue');
  const max = prefixed(def, 'maxValue');
  if (min !== undefined && compare(value, min) < 0) ctx.add('error', 'value', `Value ${show(value)} is below the minimum ${show(min)} of the profile`, expr);
  if (max !== undefined && compare(value, max) > 0) ctx.add('error', 'value', `Value ${show(value)} is above the maximum ${show(max)} of the profile`, expr);
}

/** Order of two comparable values (numbers; dates as strings of the same precision; Quantities of one unit); 0 when not comparable. */
function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string' && a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
  if (isObject(a) && isObject(b) && typeof a.value === 'number' && typeof b.value === 'number' && (a.code ?? a.unit) === (b.code ?? b.unit)) return a.value - b.value;
  return 0;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
