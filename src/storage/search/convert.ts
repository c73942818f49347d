import { parseDateRange, type DateRange } from '../../fhir/date-range.js';
import { UCUM_SYSTEM, ucumConversion } from '../../fhir/ucum.js';
import { objs, QUANTITY_TYPES, str, strs, type TypedValue } from './fhir-values.js';
import type { IndexRows } from './index-rows.js';
import { chargeUcum } from './ucum-budget.js';
import { clip, normalizeText, withoutNul } from './normalize.js';

/**
 * Conversion of one FHIRPath result item into the values of one index table. Each function
 * returns the rows without `param`; items of a type the table cannot use give no rows.
 */
type Row<K extends keyof IndexRows> = Omit<IndexRows[K][number], 'param'>;

/** String parameters: every searchable text part (all name and address parts). */
export function toStrings(v: TypedValue): Array<Row<'string'>> {
  const row = (raw: string, sortKey: boolean): Row<'string'> => ({ value: normalizeText(raw), raw: withoutNul(raw), sort_key: sortKey });
  const o = v.data as Record<string, unknown>;
  if (v.type === 'HumanName') {
    const given = strs(o.given);
    const family = strs(o.family);
    const parts = [...strs(o.prefix), ...given, ...family, ...strs(o.suffix), ...strs(o.text)].map((s) => row(s, false));
    // "given family" is searchable (`name=eve smith`); "family given" is what `_sort=name` orders by.
    if (given.length > 0 && family.length > 0) parts.push(row([...given, ...family].join(' '), false));
    const sortKey = [...family, ...given].join(' ') || strs(o.text).join(' ');
    return sortKey ? [...parts, row(sortKey, true)] : parts;
  }
  if (v.type === 'Address') {
    const parts = [...strs(o.line), ...strs(o.city), ...strs(o.district), ...strs(o.state), ...strs(o.postalCode), ...strs(o.country)];
    const text = strs(o.text).join(' ') || parts.join(' ');
    return [...parts.map((s) => row(s, false)), ...(text ? [row(text, true)] : [])];
  }
  return stringParts(v).map((s) => row(s, true));
}

function stringParts(v: TypedValue): string[] {
  const o = v.data as Record<string, unknown>;
  switch (v.type) {
    case 'CodeableConcept':
      return [...strs(o.text), ...objs(o.coding).flatMap((c) => strs(c.display))];
    case 'Coding':
    case 'Reference':
      return strs(o.display);
    case 'Identifier':
    case 'ContactPoint':
      return strs(o.value);
    case 'Annotation':
      return strs(o.text);
    default:
      return typeof v.data === 'string' && v.data.length > 0 ? [v.data] : [];
  }
}

/** Token parameters: system + code pairs (and the display text for `:text`). */
export function toTokens(v: TypedValue): Array<Row<'token'>> {
  const o = v.data as Record<string, unknown>;
  const token = (system: unknown, code: unknown, text: unknown): Row<'token'> => {
    const c = str(code) ?? (typeof code === 'boolean' || typeof code === 'number' ? String(code) : undefined);
    const t = str(text);
    return {
      system: str(system) === undefined ? null : clip(str(system) as string),
      code: c === undefined ? null : clip(c),
      code_lower: c === undefined ? null : clip(c.toLowerCase()),
      text_value: t === undefined ? null : normalizeText(t),
    };
  };
  switch (v.type) {
    case 'CodeableConcept': {
      const rows = objs(o.coding).map((c) => token(c.system, c.code, c.display ?? o.text));
      // The text on a row of its own, unless a coding's row already carries the same text
      // (`:text` reads text_value of every row: one is enough).
      const text = str(o.text);
      if (text && !rows.some((r) => r.text_value === normalizeText(text))) rows.push(token(undefined, undefined, text));
      return rows.filter((r) => r.code !== null || r.text_value !== null);
    }
    case 'Coding':
      return str(o.code) ? [token(o.system, o.code, o.display)] : [];
    case 'Identifier':
      return str(o.value) ? [token(o.system, o.value, (o.type as Record<string, unknown> | undefined)?.text)] : [];
    case 'ContactPoint':
      return str(o.value) ? [token(o.system, o.value, undefined)] : [];
    default:
      if (QUANTITY_TYPES.has(v.type ?? '')) return str(o.code) ? [token(o.system, o.code, o.unit)] : [];
      if (typeof v.data === 'string' || typeof v.data === 'boolean' || typeof v.data === 'number') {
        return [token(undefined, v.data, undefined)];
      }
      return [];
  }
}

const REFERENCE_TAIL = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/**
 * Splits a reference into target type and id: `Patient/1`, `https://any.base/fhir/Patient/1`
 * and `…/Patient/1/_history/2` all give Patient + 1. Canonical URLs (and `urn:uuid:`,
 * `#contained`) keep only the text: their tail is not a resource id.
 */
export function parseReference(reference: string, canonical = false): Row<'reference'> {
  const m = canonical ? null : REFERENCE_TAIL.exec(reference);
  return { target_type: m ? m[1] : null, target_id: m ? m[2] : null, reference: clip(reference) };
}

/** Reference parameters: Reference.reference, canonical/uri strings, or an embedded resource. */
export function toReferences(v: TypedValue): Array<Row<'reference'>> {
  const o = v.data as Record<string, unknown>;
  if (v.type === 'Reference') {
    const ref = str(o.reference);
    return ref && !ref.startsWith('#') ? [parseReference(ref)] : [];
  }
  if (v.type === 'Resource' || (typeof o?.resourceType === 'string' && typeof o.id === 'string')) {
    return typeof o.resourceType === 'string' && typeof o.id === 'string'
      ? [{ target_type: o.resourceType, target_id: o.id, reference: `${o.resourceType}/${o.id}` }]
      : [];
  }
  if (typeof v.data === 'string' && v.data.length > 0) return [parseReference(v.data, v.type === 'canonical')];
  return [];
}

/** Date parameters: date/dateTime/instant, Period and Timing as `[low, high)` ranges. */
export function toDates(v: TypedValue): DateRange[] {
  const o = v.data as Record<string, unknown>;
  if (typeof v.data === 'string') {
    const range = parseDateRange(v.data);
    return range ? [range] : [];
  }
  if (v.type === 'Period') return periodRange(o);
  if (v.type === 'Timing') {
    const events = strs(o.event).flatMap((e) => parseDateRange(e) ?? []);
    const bounds = (o.repeat as Record<string, unknown> | undefined)?.boundsPeriod;
    return bounds && typeof bounds === 'object' ? [...events, ...periodRange(bounds as Record<string, unknown>)] : events;
  }
  return [];
}

function periodRange(period: Record<string, unknown>): DateRange[] {
  const start = str(period.start) ? parseDateRange(period.start as string) : undefined;
  const end = str(period.end) ? parseDateRange(period.end as string) : undefined;
  if (!start && !end) return [];
  return [{ low: start?.low ?? null, high: end?.high ?? null }];
}

/** Number parameters: decimal and integer values (also a Quantity's value). */
export function toNumbers(v: TypedValue): Array<Row<'number'>> {
  const n = typeof v.data === 'number' ? v.data : (v.data as Record<string, unknown>)?.value;
  return typeof n === 'number' && Number.isFinite(n) ? [{ value: String(n) }] : [];
}

/** Quantity parameters: value with system and code/unit (Money: currency as the code). */
export function toQuantities(v: TypedValue): Array<Row<'quantity'>> {
  const o = v.data as Record<string, unknown>;
  if (!QUANTITY_TYPES.has(v.type ?? '') || typeof o.value !== 'number' || !Number.isFinite(o.value)) return [];
  if (v.type === 'Money') return [{ value: String(o.value), system: 'urn:iso:std:iso:4217', code: str(o.currency) ?? null, unit: null, canonical: false }];
  const row = { value: String(o.value), system: str(o.system) ?? null, code: str(o.code) ?? null, unit: str(o.unit) ?? null, canonical: false };
  // A UCUM quantity is also indexed in its canonical unit, so a search in any unit of the same
  // dimension finds it (docs/rest.md#quantity-search); the row is marked `canonical`.
  if (row.system === UCUM_SYSTEM && row.code) chargeUcum(row.code);
  const conversion = row.system === UCUM_SYSTEM && row.code ? ucumConversion(row.code) : undefined;
  if (!conversion || (conversion.unit === row.code && conversion.factor === 1 && conversion.offset === 0)) return [row];
  return [row, { value: String(o.value * conversion.factor + conversion.offset), system: UCUM_SYSTEM, code: conversion.unit, unit: null, canonical: true }];
}

/** URI parameters: the text as written. */
export function toUris(v: TypedValue): Array<Row<'uri'>> {
  return typeof v.data === 'string' && v.data.length > 0 ? [{ value: clip(v.data) }] : [];
}
