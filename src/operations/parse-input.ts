import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../fhir/json.js';
import { FhirError, issue } from '../fhir/outcome.js';
import type { InputEntry } from './input-entry.js';
import type { OperationValues } from '../core/operation.js';
import {
  cardinalityText,
  carrierOf,
  isMultiValued,
  isStringLike,
  maxOf,
  minOf,
  valueKey,
  type ParamDef,
} from './params.js';

/**
 * Checks the supplied entries against the declared input parameters (cardinality, value type,
 * `resource`/`part` use) and builds the handler's typed input (see `operation.ts`): a value
 * for single-valued parameters, an array for multi-valued ones, an object per `part` entry.
 * Undeclared names are ignored. All problems are reported together in one 400.
 */
export function buildInput(params: ParamDef[], entries: InputEntry[]): OperationValues {
  const issues: OperationOutcomeIssue[] = [];
  const input = collect(params, entries, '', issues);
  if (issues.length > 0) throw new FhirError(400, issues);
  return input;
}

function collect(params: ParamDef[], entries: InputEntry[], prefix: string, issues: OperationOutcomeIssue[]): OperationValues {
  const values: OperationValues = {};
  for (const param of params) {
    const name = `${prefix}${param.name}`;
    const given = entries.filter((e) => e.name === param.name);
    if (given.length < minOf(param) || given.length > maxOf(param)) {
      issues.push(
        issue(
          'invalid',
          `Expected ${cardinalityText(param)} value(s) for input parameter ${name}, but ${given.length} provided`,
          given.length > 0 ? entryPaths(given) : undefined,
        ),
      );
      continue;
    }
    if (given.length === 0) continue;
    const converted = given.map((entry) => valueOf(param, entry, name, issues));
    values[param.name] = isMultiValued(param) ? converted : converted[0];
  }
  return values;
}

/** The handler value of one entry, or undefined after recording why it does not fit. */
function valueOf(param: ParamDef, entry: InputEntry, name: string, issues: OperationOutcomeIssue[]): unknown {
  const carrier = carrierOf(param);
  const fail = (text: string) => {
    issues.push(issue('invalid', text, entry.path));
    return undefined;
  };
  switch (carrier.kind) {
    case 'part':
      if (!entry.part) return fail(`Parameter '${name}' must have part`);
      return collect(param.part ?? [], entry.part, `${name}.`, issues);
    case 'resource': {
      const resource = entry.resource;
      const wanted = carrier.resourceType;
      if (!isObject(resource) || (wanted !== undefined && resource.resourceType !== wanted)) {
        return fail(`Parameter '${name}' must be ${wanted ? `a ${wanted}` : 'a'} resource`);
      }
      return resource;
    }
    case 'value': {
      const given = entry.valueType;
      const ok = given === carrier.type || (given !== undefined && isStringLike(given) && isStringLike(carrier.type));
      return ok ? entry.value : fail(`Parameter '${name}' must be ${valueKey(carrier.type)}`);
    }
    case 'open':
      if (entry.valueType !== undefined) {
        if (!carrier.allowed || carrier.allowed.includes(entry.valueType)) return entry.value;
        return fail(`Parameter '${name}' must be one of ${carrier.allowed.map(valueKey).join(', ')}`);
      }
      if (carrier.resource && isObject(entry.resource)) return entry.resource;
      return fail(`Parameter '${name}' must have a value`);
  }
}

function entryPaths(entries: InputEntry[]): string[] | undefined {
  const paths = entries.map((e) => e.path).filter((p): p is string => p !== undefined);
  return paths.length > 0 ? paths : undefined;
}
