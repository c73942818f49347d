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

/** The carrier a parameter definition implies. */
export function carrierOf(param: ParamDef): Carrier {
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

/** `valueCoding` for `Coding`, `valueDateTime` for `dateTime`. */
export function valueKey(type: string): string {
  return `value${type.charAt(0).toUpperCase()}${type.slice(1)}`;
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

/** A plain JSON object (not null, not an array). */

/** The in- or out-parameters of a definition, in definition order. */
export function paramsOf(params: ParamDef[] | undefined, use: 'in' | 'out'): ParamDef[] {
  return (params ?? []).filter((p) => p.use === use);
}
