import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { validateResource } from '../fhir/validation/validate-resource.js';
import type { InputEntry } from './input-entry.js';
import { isObject } from '../fhir/json.js';
import { typeOfValueKey, valueKeysOf } from './params.js';

/** Deeper `part` nesting than this is refused before anything recurses over it. */
const MAX_PART_DEPTH = 32;
/** Structural issues reported at most (a huge malformed array must not build a huge answer). */
const MAX_ISSUES = 20;

/**
 * Turns a POSTed body into input entries. The body must be a structurally valid Parameters
 * resource: first the rules docs/operations.md#post names (every entry has a `name` and at most one of
 * value[x] / `resource` / `part`), reported with the entry's path; then the R4
 * StructureDefinition check (JSON types, primitive formats, nested datatypes and resources), so
 * handlers only ever see well-formed values. Every problem is a 400, never a throw of another kind.
 */
export function parseParametersBody(input: unknown, unvalidated?: string): InputEntry[] {
  if (!isObject(input) || input.resourceType !== 'Parameters') throw badRequest('Expected a Parameters resource');
  const body = lenientBooleans(input, 0);
  // FHIR JSON forbids empty arrays, but `"parameter": []` is a common way of saying "no input".
  if (Array.isArray(body.parameter) && body.parameter.length === 0) delete body.parameter;
  const issues: OperationOutcomeIssue[] = [];
  checkEntries(body.parameter, 'Parameters.parameter', 0, issues);
  if (issues.length > 0) throw new FhirError(400, issues);
  const skipped = unvalidatedPaths(body.parameter, unvalidated);
  const problems = validateResource(body).filter((p) => !isMissingInsideResource(p) && !(p.expression ?? []).some((e) => skipped.some((s) => e === s || e.startsWith(`${s}.`))));
  if (problems.length > 0) throw new FhirError(400, problems);
  return toEntries(body.parameter, 'Parameters.parameter');
}

/**
 * docs/operations.md#post: `valueBoolean: "true"` / `"false"` (a JSON string) is read as the
 * boolean, in entries, their parts and Parameters carried by entries. Returns a copy; other
 * values are left for the validation to judge.
 */
function lenientBooleans(parameters: Record<string, unknown>, depth: number): Record<string, unknown> {
  const fix = (list: unknown, level: number): unknown => {
    if (!Array.isArray(list) || level > MAX_PART_DEPTH) return list;
    return list.map((entry: unknown) => {
      if (!isObject(entry)) return entry;
      const copy: Record<string, unknown> = { ...entry };
      if (copy.valueBoolean === 'true' || copy.valueBoolean === 'false') copy.valueBoolean = copy.valueBoolean === 'true';
      if (copy.part !== undefined) copy.part = fix(copy.part, level + 1);
      if (isObject(copy.resource) && copy.resource.resourceType === 'Parameters' && depth < MAX_PART_DEPTH) {
        copy.resource = lenientBooleans(copy.resource, depth + 1);
      }
      return copy;
    });
  };
  const body = { ...parameters };
  if (body.parameter !== undefined) body.parameter = fix(body.parameter, 0);
  return body;
}

/**
 * Paths of the resources of the top-level `name` entries (`Parameters.parameter[<i>].resource`):
 * the operation validates them itself (Operation.resourceInput).
 */
function unvalidatedPaths(list: unknown, name: string | undefined): string[] {
  if (name === undefined || !Array.isArray(list)) return [];
  return list.flatMap((entry, i) => (isObject(entry) && entry.name === name ? [`Parameters.parameter[${i}].resource`] : []));
}

/**
 * A missing required element inside a resource carried by a parameter (`tx-resource`,
 * `valueSet`, …) is not a malformed request: terminology clients send incomplete or broken
 * resources on purpose, and the operation reports what is wrong with them in its own terms
 * (e.g. a ValueSet filter without a value is an `invalid` issue of $validate-code). Wrong JSON
 * types, unknown elements and bad primitives are still refused, so handlers see typed values.
 */
function isMissingInsideResource(problem: OperationOutcomeIssue): boolean {
  return problem.code === 'required' && (problem.expression ?? []).some((e) => /\.resource\./.test(e));
}

/**
 * The entry-level rules, checked on every entry (declared or not) so a malformed body is
 * refused as a whole. Shapes the StructureDefinition check reports better (non-arrays,
 * non-objects) are left to it.
 */
function checkEntries(list: unknown, path: string, depth: number, issues: OperationOutcomeIssue[]): void {
  if (!Array.isArray(list)) return;
  if (depth > MAX_PART_DEPTH) {
    issues.push(issue('invalid', `Parameters nested too deeply (more than ${MAX_PART_DEPTH} levels)`, path));
    return;
  }
  for (let i = 0; i < list.length && issues.length < MAX_ISSUES; i++) {
    const entry: unknown = list[i];
    if (!isObject(entry)) continue;
    const at = `${path}[${i}]`;
    if (typeof entry.name !== 'string' || entry.name.length === 0) {
      issues.push(issue('invalid', `Parameter ${at} has no name`, at));
    }
    const values = valueKeysOf(entry);
    if (values.length > 1) {
      issues.push(issue('invalid', `Parameter ${at} has more than one value[x] (${values.join(', ')})`, at));
    }
    const kinds = (values.length > 0 ? 1 : 0) + (entry.resource !== undefined ? 1 : 0) + (entry.part !== undefined ? 1 : 0);
    if (kinds > 1) {
      issues.push(issue('invalid', `Parameter ${at} must have only one of value[x], resource or part`, at));
    }
    checkEntries(entry.part, `${at}.part`, depth + 1, issues);
  }
}

/**
 * Entries of a validated list. The shapes were checked above; the guards here only make sure a
 * gap in that check can never turn into a crash (a 500) — such entries are skipped.
 */
function toEntries(list: unknown, path: string): InputEntry[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry, i) => {
    if (!isObject(entry) || typeof entry.name !== 'string') return [];
    const at = `${path}[${i}]`;
    const result: InputEntry = { name: entry.name, path: at };
    const [key] = valueKeysOf(entry);
    if (key !== undefined) {
      result.valueType = typeOfValueKey(key);
      result.value = entry[key];
    }
    if (entry.resource !== undefined) result.resource = entry.resource;
    if (entry.part !== undefined) result.part = toEntries(entry.part, `${at}.part`);
    return [result];
  });
}
