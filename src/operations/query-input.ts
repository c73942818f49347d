import type { OperationDefinition } from '@medplum/fhirtypes';
import { badRequest, methodNotAllowed } from '../fhir/outcome.js';
import type { InputEntry } from './input-entry.js';
import { carrierOf, paramsByName, paramsOf, type ParamDef } from './params.js';

/**
 * GET invocation (docs/operations.md#get). Refused for operations that affect state. The
 * "simple types only" rule applies to the parameters the request actually supplies: a query
 * pair naming a complex-typed input is a 400, other complex inputs of the definition do not
 * matter. Empty values count as absent, undeclared names are ignored, and values are converted
 * to their declared type.
 */
export function parseQueryInput(definition: OperationDefinition, query: Array<[string, string]>): InputEntry[] {
  if (definition.affectsState === true) {
    throw methodNotAllowed('GET', ['POST'], `Operation $${definition.code} affects state and cannot be invoked with GET`);
  }
  const declared = paramsByName(paramsOf(definition.parameter, 'in'));
  const entries: InputEntry[] = [];
  for (const [name, value] of query) {
    if (value === '') continue;
    const param = declared.get(name);
    if (!param) continue;
    const carrier = carrierOf(param);
    if (carrier.kind !== 'value' || /^[A-Z]/.test(carrier.type)) {
      const type = param.type ?? (param.part?.length ? 'part' : 'Element');
      throw badRequest(`Complex parameter ${name} (${type}) cannot be passed via query string`);
    }
    entries.push({ name, valueType: carrier.type, value: convert(param, carrier.type, value) });
  }
  return entries;
}

/** Converts a query string value to the JSON value of its declared primitive type. */
function convert(param: ParamDef, type: string, raw: string): unknown {
  const invalid = () => badRequest(`Invalid value '${raw}' provided for ${type} parameter '${param.name}'`);
  switch (type) {
    case 'boolean':
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      throw invalid();
    case 'integer':
    case 'unsignedInt':
    case 'positiveInt': {
      if (!/^[+-]?\d+$/.test(raw)) throw invalid();
      const n = Number(raw);
      const min = type === 'positiveInt' ? 1 : type === 'unsignedInt' ? 0 : -2147483648;
      if (!Number.isSafeInteger(n) || n < min || n > 2147483647) throw invalid();
      return n;
    }
    case 'decimal': {
      if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(raw)) throw invalid();
      const n = Number(raw);
      if (!Number.isFinite(n)) throw invalid();
      return n;
    }
    default:
      return raw;
  }
}
