import type { OperationDefinition, ParametersParameter, Resource } from '@medplum/fhirtypes';
import { isObject } from '../fhir/json.js';
import { carrierOf, isMultiValued, isPrimitive, isStringLike, maxOf, minOf, paramsByName, paramsOf, valueKey, type ParamDef } from './params.js';
import { TypedValue } from './typed-value.js';

/**
 * A handler's output that does not match its OperationDefinition: a server bug, never the
 * client's fault. `invoke.ts` logs it and answers 500.
 */
export class OutputViolation extends Error {
  override readonly name = 'OutputViolation';
}

/**
 * Formats a handler's output as the response body, driven by the definition: out-parameters
 * in definition order, typed `value<Type>` entries (inferred from the JavaScript value for
 * open types like `Element`, or given with `typed()`), repeated entries for multi-valued
 * parameters, nested `part`s, absent values omitted. A single `return` out-parameter holding a
 * resource is the body itself. Throws {@link OutputViolation} when the output breaks the definition.
 */
export function formatOutput(definition: OperationDefinition, output: unknown): Resource {
  if (!isObject(output)) throw new OutputViolation(`handler returned ${kindOf(output)}, expected an object of out-parameters`);
  const outs = paramsOf(definition.parameter, 'out');
  if (outs.length === 1 && outs[0].name === 'return') {
    const value = output.return;
    checkKeys(outs, output, '');
    if (isResource(value)) {
      checkCount(outs[0], [value], 'return');
      formatEntry(outs[0], value, 'return'); // type check only
      return value as Resource;
    }
  }
  const parameter = formatParams(outs, output, '');
  return parameter.length > 0 ? { resourceType: 'Parameters', parameter } : { resourceType: 'Parameters' };
}

function formatParams(params: ParamDef[], values: Record<string, unknown>, prefix: string): ParametersParameter[] {
  checkKeys(params, values, prefix);
  const entries: ParametersParameter[] = [];
  for (const param of params) {
    const value = values[param.name];
    // The full name (`property.value`) is only spelled out for a nested prefix or an error.
    const name = prefix === '' ? param.name : `${prefix}${param.name}`;
    const items = itemsOf(param, value, name);
    checkCount(param, items, name);
    for (let i = 0; i < items.length; i++) entries.push(formatEntry(param, items[i], name));
  }
  return entries;
}

/** The values of one parameter as a list: multi-valued ones must be arrays, single-valued ones must not. */
function itemsOf(param: ParamDef, value: unknown, name: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (isMultiValued(param)) {
    if (!Array.isArray(value)) throw new OutputViolation(`out-parameter ${name} is multi-valued: expected an array, got ${kindOf(value)}`);
    if (value.some((v) => v === undefined || v === null)) throw new OutputViolation(`out-parameter ${name} contains null`);
    return value;
  }
  if (Array.isArray(value)) throw new OutputViolation(`out-parameter ${name} is single-valued (max ${param.max}), got an array`);
  return [value];
}

function checkCount(param: ParamDef, items: unknown[], name: string): void {
  if (items.length < minOf(param) || items.length > maxOf(param)) {
    throw new OutputViolation(`out-parameter ${name}: ${items.length} value(s) for cardinality ${param.min}..${param.max}`);
  }
}

/** Every key of the output must be a declared out-parameter: the definition is the whole truth. */
function checkKeys(params: ParamDef[], values: Record<string, unknown>, prefix: string): void {
  const declared = paramsByName(params);
  for (const key in values) {
    if (Object.hasOwn(values, key) && values[key] !== undefined && !declared.has(key)) throw new OutputViolation(`undeclared out-parameter ${prefix}${key}`);
  }
}

function formatEntry(param: ParamDef, item: unknown, name: string): ParametersParameter {
  const carrier = carrierOf(param);
  switch (carrier.kind) {
    case 'part': {
      if (!isObject(item) || item instanceof TypedValue) throw new OutputViolation(`out-parameter ${name} has parts: expected an object, got ${kindOf(item)}`);
      const part = formatParams(param.part ?? [], item, `${name}.`);
      return part.length > 0 ? { name: param.name, part } : { name: param.name };
    }
    case 'resource':
      if (!isResource(item) || (carrier.resourceType !== undefined && item.resourceType !== carrier.resourceType)) {
        throw new OutputViolation(`out-parameter ${name} must be a ${carrier.resourceType ?? ''} resource, got ${kindOf(item)}`);
      }
      return { name: param.name, resource: item as Resource };
    case 'value': {
      const value = item instanceof TypedValue ? unwrap(item, [carrier.type], name) : item;
      return typedEntry(param.name, carrier.type, value, name);
    }
    case 'open': {
      if (item instanceof TypedValue) return typedEntry(param.name, item.type, unwrap(item, carrier.allowed, name), name);
      if (carrier.resource && isResource(item)) return { name: param.name, resource: item as Resource };
      const type = inferType(item, carrier.allowed);
      if (!type) throw new OutputViolation(`out-parameter ${name}: cannot tell the FHIR type of ${kindOf(item)} (use typed())`);
      return typedEntry(param.name, type, item, name);
    }
  }
}

function unwrap(item: TypedValue, allowed: string[] | undefined, name: string): unknown {
  if (allowed && !allowed.includes(item.type)) {
    throw new OutputViolation(`out-parameter ${name}: type ${item.type} is not one of ${allowed.join(', ')}`);
  }
  return item.value;
}

function typedEntry(paramName: string, type: string, value: unknown, name: string): ParametersParameter {
  if (!fitsType(type, value)) throw new OutputViolation(`out-parameter ${name}: ${kindOf(value)} is not a valid ${type}`);
  return { name: paramName, [valueKey(type)]: value };
}

/** Whether a JavaScript value can be written as a value of FHIR type `type` (JSON shape only). */
function fitsType(type: string, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isInteger(value);
    case 'unsignedInt':
      return Number.isInteger(value) && (value as number) >= 0;
    case 'positiveInt':
      return Number.isInteger(value) && (value as number) > 0;
    case 'decimal':
      return typeof value === 'number' && Number.isFinite(value);
    default:
      if (isPrimitive(type)) return typeof value === 'string' && value.length > 0;
      return isObject(value) && !(value instanceof TypedValue) && value.resourceType === undefined;
  }
}

/** Shapes of the common datatypes, recognised by their keys (the first one that fits wins). */
const SHAPES: Array<{ type: string; keys: string[]; needs: string[] }> = [
  { type: 'Quantity', keys: ['value', 'comparator', 'unit', 'system', 'code'], needs: ['value'] },
  { type: 'Coding', keys: ['system', 'version', 'code', 'display', 'userSelected'], needs: ['system', 'code', 'display'] },
  { type: 'CodeableConcept', keys: ['coding', 'text'], needs: ['coding', 'text'] },
  { type: 'Reference', keys: ['reference', 'type', 'identifier', 'display'], needs: ['reference', 'identifier', 'display'] },
  { type: 'Period', keys: ['start', 'end'], needs: ['start', 'end'] },
];

/**
 * The FHIR type of a value of an open-typed out-parameter: boolean → boolean, whole number →
 * integer, other number → decimal, string → string (or the first string-like allowed type),
 * objects by shape. Undefined when it cannot be told or is not allowed.
 */
function inferType(value: unknown, allowed: string[] | undefined): string | undefined {
  const ok = (t: string) => !allowed || allowed.includes(t);
  let type: string | undefined;
  if (typeof value === 'boolean') type = 'boolean';
  else if (typeof value === 'number') type = Number.isInteger(value) && ok('integer') ? 'integer' : 'decimal';
  else if (typeof value === 'string') type = ok('string') ? 'string' : allowed?.find(isStringLike);
  else if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => k !== 'id' && k !== 'extension');
    type = SHAPES.find((s) => keys.length > 0 && keys.every((k) => s.keys.includes(k)) && s.needs.some((k) => k in value))?.type;
  }
  return type !== undefined && ok(type) ? type : undefined;
}

function isResource(v: unknown): v is Record<string, unknown> & { resourceType: string } {
  return isObject(v) && !(v instanceof TypedValue) && typeof v.resourceType === 'string';
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof TypedValue) return `typed ${v.type}`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)?.slice(0, 40)}`;
}
