/**
 * An output value with an explicit FHIR type, for out-parameters declared with an open type
 * (`Element`, `Any`, allowed-type lists) where the JavaScript value alone is ambiguous — e.g.
 * a `$lookup` property value that is a `code`, not a `string`:
 *
 * ```ts
 * return { property: [{ code: 'status', value: typed('code', 'active') }] };
 * ```
 */
export class TypedValue {
  constructor(
    /** FHIR type name: `code`, `Coding`, `dateTime`, … */
    readonly type: string,
    readonly value: unknown,
  ) {}
}

/** Marks `value` as being of FHIR type `type` (see {@link TypedValue}). */
export function typed(type: string, value: unknown): TypedValue {
  return new TypedValue(type, value);
}
