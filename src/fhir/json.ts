/**
 * Deepest nesting of arrays and objects a JSON request body (http/json-body.ts) or a patched resource (rest/patch.ts) may have. Everything behind the
 * parser (validation, FHIRPath, canonical JSON, operation input) walks values recursively, so
 * an unbounded depth would end in a stack overflow. FHIR content stays far below this: the
 * resource validator stops at 64 element levels, which is at most 128 JSON levels.
 */
export const MAX_JSON_DEPTH = 256;

/** A plain JSON object (not null, not an array): the shape of a resource or an element. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
