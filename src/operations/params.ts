import type { OperationDefinitionParameter } from '@medplum/fhirtypes';
import { isResourceType } from '../fhir/definitions.js';

/**
 * Facts about OperationDefinition parameters shared by input parsing and output formatting:
 * cardinality, how a declared type is carried in Parameters (value[x], resource or part) and
 * the value[x] key ↔ type name mapping.
 */

const PRIMITIVES = new Set([
  'boolean', 'integer', 'string', 'decimal', 'uri', 'url', 'canonical', 'base64Binary', 'instant', 'date',
  'dateTime', 'time', 'code', 'oid', 'id', 'markdown', 'unsignedInt', 'positiveInt', 'uuid',
]);

/** docs/operations.md#input-validation: any of these value[x] is accepted for a parameter of one of these types. */
const STRING_LIKE = new Set(['string', 'code', 'uri', 'url', 'canonical', 'id', 'oid', 'uuid', 'markdown']);

/** Types that carry a resource (`Parameters.parameter.resource`) rather than a value[x]. */
const ANY_RESOURCE = new Set(['Resource', 'DomainResource']);

/** Declared types that accept several value[x] (restricted by the allowed-type extension when present). */
const OPEN_TYPES = new Set(['Element', 'Any', '*', 'Type', 'DataType']);

const ALLOWED_TYPE_EXT = 'http://hl7.org/fhir/StructureDefinition/operationdefinition-allowed-type';

export type ParamDef = OperationDefinitionParameter;

/** True for FHIR primitive type names (`string`, `dateTime`, …). */
export function isPrimitive(type: string): boolean {
  return PRIMITIVES.has(type);
}

/** True for the string-like primitive types of the leniency rule. */
export function isStringLike(type: string): boolean {
  return STRING_LIKE.has(type);
}

/** How a parameter's values are carried in a Parameters entry. */
export type Carrier =
  | { kind: 'part' }
  | { kind: 'resource'; resourceType?: string }
  | { kind: 'value'; type: string }
  /** Element/Any/untyped: a value[x] of any (allowed) type, or a resource for `Any`. */
  | { kind: 'open'; allowed?: string[]; resource: boolean };

/**
 * Facts derived from a parameter definition are computed once per definition object: the
 * operation path asks for them on every entry of every request (a `$lookup` answer has dozens),
 * and definitions are never mutated once published — a re-publication makes new objects.
 */
const carriers = new WeakMap<ParamDef, Carrier>();

/** The carrier a parameter definition implies. */
export function carrierOf(param: ParamDef): Carrier {
  let carrier = carriers.get(param);
  if (carrier === undefined) {
    carrier = computeCarrier(param);
    carriers.set(param, carrier);
  }
  return carrier;
}

function computeCarrier(param: ParamDef): Carrier {
  if (param.part && param.part.length > 0) return { kind: 'part' };
  const type = param.type;
  if (!type || OPEN_TYPES.has(type)) {
    const allowed = (param.extension ?? []).filter((e) => e.url === ALLOWED_TYPE_EXT && e.valueUri).map((e) => e.valueUri as string);
    return { kind: 'open', allowed: allowed.length > 0 ? allowed : undefined, resource: type === 'Any' || !type };
  }
  if (ANY_RESOURCE.has(type)) return { kind: 'resource' };
  if (isResourceType(type)) return { kind: 'resource', resourceType: type };
  return { kind: 'value', type };
}

/** Declared maximum: a number, or Infinity for `*` (a malformed max counts as unbounded). */
export function maxOf(param: ParamDef): number {
  if (param.max === '*') return Infinity;
  const n = Number(param.max);
  return Number.isInteger(n) && n >= 0 ? n : Infinity;
}

/** Declared minimum (0 when absent). */
export function minOf(param: ParamDef): number {
  return Number.isInteger(param.min) && param.min > 0 ? param.min : 0;
}

/** Single-valued parameters are given to/taken from handlers as a value, others as an array. */
export function isMultiValued(param: ParamDef): boolean {
  return maxOf(param) > 1;
}

/** `1`, `0..1`, `1..*` — the cardinality as docs/operations.md#input-validation writes it in messages. */
export function cardinalityText(param: ParamDef): string {
  const min = minOf(param);
  const max = maxOf(param);
  if (min === max) return String(min);
  return `${min}..${max === Infinity ? '*' : max}`;
}

const valueKeys = new Map<string, string>();

/** `valueCoding` for `Coding`, `valueDateTime` for `dateTime`. */
export function valueKey(type: string): string {
  let key = valueKeys.get(type);
  if (key === undefined) {
    key = `value${type.charAt(0).toUpperCase()}${type.slice(1)}`;
    // Type names come from definitions and inputs: a bounded cache, not one entry per string seen.
    if (valueKeys.size < 1000) valueKeys.set(type, key);
  }
  return key;
}

/** The type named by a value[x] key (`valueDateTime` → `dateTime`), or undefined when `key` is not one. */
export function typeOfValueKey(key: string): string | undefined {
  if (!/^value[A-Z]/.test(key)) return undefined;
  const suffix = key.slice(5);
  const lower = suffix.charAt(0).toLowerCase() + suffix.slice(1);
  return PRIMITIVES.has(lower) ? lower : suffix;
}

/** The value[x] keys present on an entry object. */
export function valueKeysOf(entry: Record<string, unknown>): string[] {
  return Object.keys(entry).filter((k) => typeOfValueKey(k) !== undefined);
}

const inParams = new WeakMap<ParamDef[], ParamDef[]>();
const outParams = new WeakMap<ParamDef[], ParamDef[]>();
const NO_PARAMS: ParamDef[] = [];

/** The in- or out-parameters of a definition, in definition order (the same array each time: do not modify it). */
export function paramsOf(params: ParamDef[] | undefined, use: 'in' | 'out'): ParamDef[] {
  if (!params) return NO_PARAMS;
  const cache = use === 'in' ? inParams : outParams;
  let found = cache.get(params);
  if (found === undefined) {
    found = params.filter((p) => p.use === use);
    cache.set(params, found);
  }
  return found;
}

const byNames = new WeakMap<ParamDef[], Map<string, ParamDef>>();

/** `params` by name (computed once per list; the first of a repeated name wins). */
export function paramsByName(params: ParamDef[]): Map<string, ParamDef> {
  let found = byNames.get(params);
  if (found === undefined) {
    found = new Map();
    for (const p of params) if (!found.has(p.name)) found.set(p.name, p);
    byNames.set(params, found);
  }
  return found;
}
