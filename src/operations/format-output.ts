import type { OperationDefinition, ParametersParameter, Resource } from '@medplum/fhirtypes';
import { isObject } from '../fhir/json.js';
import { carrierOf, isMultiValued, isPrimitive, isStringLike, maxOf, minOf, paramsByName, paramsOf, valueKey, type Carrier, type ParamDef } from './params.js';
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
  const plan = planOf(outs);
  if (outs.length === 1 && outs[0].name === 'return') {
    const value = output.return;
    checkKeys(plan.byName, output, undefined);
    if (isResource(value)) {
      checkCount(plan.params[0], 1, undefined);
      formatEntry(plan.params[0], value, undefined); // type check only
      return value as Resource;
    }
  }
  const parameter = formatPlanned(plan, output, undefined);
  return parameter.length > 0 ? { resourceType: 'Parameters', parameter } : { resourceType: 'Parameters' };
}

/** What formatting needs of one declared out-parameter, derived once per definition object. */
interface ParamPlan {
  param: ParamDef;
  min: number;
  max: number;
  multi: boolean;
  carrier: Carrier;
  /** The plan of its parts. */
  parts?: ListPlan;
}

interface ListPlan {
  params: ParamPlan[];
  byName: Map<string, ParamDef>;
}

const plans = new WeakMap<ParamDef[], ListPlan>();

/** The plan of a parameter list, made on first use (definitions are not mutated once published). */
function planOf(params: ParamDef[]): ListPlan {
  let plan = plans.get(params);
  if (plan === undefined) {
    plan = {
      byName: paramsByName(params),
      params: params.map((param) => {
        const carrier = carrierOf(param);
        return {
          param,
          min: minOf(param),
          max: maxOf(param),
          multi: isMultiValued(param),
          carrier,
          parts: carrier.kind === 'part' ? planOf(param.part ?? []) : undefined,
        };
      }),
    };
    plans.set(params, plan);
  }
  return plan;
}

/** The dotted name of a parameter in messages (`property.value`); only spelled out when needed. */
function nameOf(parent: string | undefined, param: ParamDef): string {
  return parent === undefined ? param.name : `${parent}.${param.name}`;
}

/** Formats `values` by `plan`; `parent` names the enclosing part entry, for messages. */
function formatPlanned(plan: ListPlan, values: Record<string, unknown>, parent: string | undefined): ParametersParameter[] {
  checkKeys(plan.byName, values, parent);
  const entries: ParametersParameter[] = [];
  for (const pp of plan.params) {
    const value = values[pp.param.name];
    if (value === undefined || value === null) {
      if (pp.min > 0) checkCount(pp, 0, parent);
      continue;
    }
    const items = itemsOf(pp, value, parent);
    checkCount(pp, items.length, parent);
    for (let i = 0; i < items.length; i++) entries.push(formatEntry(pp, items[i], parent));
  }
  return entries;
}

/** The values of one parameter as a list: multi-valued ones must be arrays, single-valued ones must not. */
function itemsOf(pp: ParamPlan, value: unknown, parent: string | undefined): unknown[] {
  const name = () => nameOf(parent, pp.param);
  if (pp.multi) {
    if (!Array.isArray(value)) throw new OutputViolation(`out-parameter ${name()} is multi-valued: expected an array, got ${kindOf(value)}`);
    for (let i = 0; i < value.length; i++) {
      if (value[i] === undefined || value[i] === null) throw new OutputViolation(`out-parameter ${name()} contains null`);
    }
    return value;
  }
  if (Array.isArray(value)) throw new OutputViolation(`out-parameter ${name()} is single-valued (max ${pp.param.max}), got an array`);
  return [value];
}

function checkCount(pp: ParamPlan, count: number, parent: string | undefined): void {
  if (count < pp.min || count > pp.max) {
    throw new OutputViolation(`out-parameter ${nameOf(parent, pp.param)}: ${count} value(s) for cardinality ${pp.param.min}..${pp.param.max}`);
  }
}

/** Every key of the output must be a declared out-parameter: the definition is the whole truth. */
function checkKeys(declared: Map<string, ParamDef>, values: Record<string, unknown>, parent: string | undefined): void {
  for (const key in values) {
    if (Object.hasOwn(values, key) && values[key] !== undefined && !declared.has(key)) {
      throw new OutputViolation(`undeclared out-parameter ${parent === undefined ? '' : `${parent}.`}${key}`);
    }
  }
}

function formatEntry(pp: ParamPlan, item: unknown, parent: string | undefined): ParametersParameter {
  const { carrier, param } = pp;
  const name = () => nameOf(parent, param);
  switch (carrier.kind) {
    case 'part': {
      if (!isObject(item) || item instanceof TypedValue) throw new OutputViolation(`out-parameter ${name()} has parts: expected an object, got ${kindOf(item)}`);
      const part = formatPlanned(pp.parts as ListPlan, item, name());
      return part.length > 0 ? { name: param.name, part } : { name: param.name };
    }
    case 'resource':
      if (!isResource(item) || (carrier.resourceType !== undefined && item.resourceType !== carrier.resourceType)) {
        throw new OutputViolation(`out-parameter ${name()} must be a ${carrier.resourceType ?? ''} resource, got ${kindOf(item)}`);
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
      if (!type) throw new OutputViolation(`out-parameter ${name()}: cannot tell the FHIR type of ${kindOf(item)} (use typed())`);
      return typedEntry(param.name, type, item, name);
    }
  }
}

function unwrap(item: TypedValue, allowed: string[] | undefined, name: () => string): unknown {
  if (allowed && !allowed.includes(item.type)) {
    throw new OutputViolation(`out-parameter ${name()}: type ${item.type} is not one of ${allowed.join(', ')}`);
  }
  return item.value;
}

function typedEntry(paramName: string, type: string, value: unknown, name: () => string): ParametersParameter {
  if (!fitsType(type, value)) throw new OutputViolation(`out-parameter ${name()}: ${kindOf(value)} is not a valid ${type}`);
  return entryOf(paramName, valueKey(type), value);
}

/**
 * `{ name, [key]: value }`, with a literal of fixed shape for the common value[x] keys: an object
 * literal with a computed key takes V8's slow path (a dictionary-like object that is also slower
 * to serialise), and answers are made of dozens of these.
 */
function entryOf(name: string, key: string, value: unknown): ParametersParameter {
  switch (key) {
    case 'valueString':
      return { name, valueString: value as string };
    case 'valueCode':
      return { name, valueCode: value as string };
    case 'valueBoolean':
      return { name, valueBoolean: value as boolean };
    case 'valueCoding':
      return { name, valueCoding: value as ParametersParameter['valueCoding'] };
    case 'valueUri':
      return { name, valueUri: value as string };
    case 'valueInteger':
      return { name, valueInteger: value as number };
    case 'valueDecimal':
      return { name, valueDecimal: value as number };
    case 'valueDateTime':
      return { name, valueDateTime: value as string };
    case 'valueCanonical':
      return { name, valueCanonical: value as string };
    case 'valueCodeableConcept':
      return { name, valueCodeableConcept: value as ParametersParameter['valueCodeableConcept'] };
    default:
      return { name, [key]: value };
  }
}

/** Whether a JavaScript value can be written as a value of FHIR type `type` (JSON shape only). */
export function fitsType(type: string, value: unknown): boolean {
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
