/**
 * What a FHIRPath result item is: its FHIR type (from the model when the engine knows it,
 * else guessed from the JSON shape — the admin resource types are not in the R4 model) and
 * its JSON data.
 */
export interface TypedValue {
  type: string | undefined;
  data: unknown;
}

interface NodeLike {
  data: unknown;
  fhirNodeDataType?: string | null;
  parentResNode?: unknown;
}

/** Unwraps a fhirpath ResourceNode (or a plain computed value) into type + data. */
export function typedValue(item: unknown): TypedValue | undefined {
  if (item === null || item === undefined) return undefined;
  if (typeof item === 'object' && 'parentResNode' in item && 'data' in item) {
    const node = item as NodeLike;
    if (node.data === null || node.data === undefined) return undefined;
    return { type: node.fhirNodeDataType ?? guessType(node.data), data: node.data };
  }
  if (typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean') {
    return { type: typeof item === 'number' ? 'decimal' : typeof item, data: item };
  }
  // Computed date/time/quantity values of the engine render as FHIR text.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- FHIRPath date/time/quantity values render themselves
  const text = String(item);
  return text.startsWith('[object') ? undefined : { type: 'string', data: text };
}

/** Best guess of a complex type from its JSON shape. */
function guessType(data: unknown): string | undefined {
  if (typeof data === 'string') return 'string';
  if (typeof data === 'boolean') return 'boolean';
  if (typeof data === 'number') return 'decimal';
  if (!data || typeof data !== 'object') return undefined;
  const o = data as Record<string, unknown>;
  if (typeof o.resourceType === 'string') return 'Resource';
  if ('reference' in o || ('display' in o && !('code' in o))) return 'Reference';
  if ('coding' in o || ('text' in o && Object.keys(o).length === 1)) return 'CodeableConcept';
  if ('family' in o || 'given' in o) return 'HumanName';
  if ('line' in o || 'city' in o || 'postalCode' in o || 'country' in o) return 'Address';
  if ('start' in o || 'end' in o) return 'Period';
  if ('value' in o && ('unit' in o || typeof o.value === 'number')) return 'Quantity';
  if ('system' in o && 'value' in o) return 'Identifier';
  if ('code' in o) return 'Coding';
  if ('value' in o) return 'Identifier';
  return undefined;
}

/** Quantity-like data types (all share value/system/code/unit, Money has currency). */
export const QUANTITY_TYPES = new Set(['Quantity', 'Age', 'Duration', 'Distance', 'Count', 'SimpleQuantity', 'MoneyQuantity', 'Money']);

/** Non-empty string of a JSON value, or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** The strings of a possibly repeated JSON value. */
export function strs(value: unknown): string[] {
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v.length > 0);
}

/** Objects of a possibly repeated JSON value. */
export function objs(value: unknown): Array<Record<string, unknown>> {
  return (Array.isArray(value) ? value : [value]).filter(
    (v): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v),
  );
}
