import type { AccessPolicy, Expression, Resource } from '@medplum/fhirtypes';
import fhirpathEngine from 'fhirpath';
import r4 from 'fhirpath/fhir-context/r4';
import { EvaluationTimeout, EvaluatorBusy, WAIT_FACTOR, type FhirPathEvaluator } from '../fhir/fhirpath-evaluator.js';
import { FhirError, issue } from '../fhir/outcome.js';
import { expressionFor, searchParameter } from './search/parameters.js';

/**
 * The field rules of an access policy (Medplum's AccessPolicy.resource `hiddenFields`,
 * `readonlyFields`, `writeConstraint`; docs/auth.md#access-policies), for the entries of one
 * resource type (and `*`):
 * - hidden fields are removed from every resource the member reads (read, search, history,
 *   includes) and cannot be written: a write keeps their stored value;
 * - read-only fields are read, and a write keeps their stored value (a create drops them);
 * - write constraints are FHIRPath expressions that must be true for a create or update, with
 *   `%before` (the stored version; empty for a create) and `%after` (the version written),
 *   evaluated in the FHIRPath thread with its time limit (an administrator writes them; any
 *   member's write pays for them: docs/errors.md#fhirpath-evaluation).
 * A field is an element name (`birthDate`) or a dotted path (`name.family`, `meta.author`);
 * through an array, a write keeps element i's stored value in element i.
 */

export interface FieldRules {
  hidden: string[];
  readonly: string[];
  constraints: Expression[];
}

/** The field rules of `policy` for `resourceType`; undefined when it has none. */
export function fieldRulesOf(policy: AccessPolicy | undefined, resourceType: string): FieldRules | undefined {
  if (!policy) return undefined;
  const rules: FieldRules = { hidden: [], readonly: [], constraints: [] };
  for (const entry of policy.resource ?? []) {
    if (entry.resourceType !== resourceType && entry.resourceType !== '*') continue;
    rules.hidden.push(...(entry.hiddenFields ?? []));
    rules.readonly.push(...(entry.readonlyFields ?? []));
    rules.constraints.push(...(entry.writeConstraint ?? []));
  }
  return rules.hidden.length + rules.readonly.length + rules.constraints.length > 0 ? rules : undefined;
}

/** A copy of `resource` without the hidden fields. */
export function withoutHidden(resource: Resource, rules: FieldRules): Resource {
  if (rules.hidden.length === 0) return resource;
  const copy = structuredClone(resource) as unknown as Json;
  for (const path of rules.hidden) remove(copy, path.split('.'));
  return copy as unknown as Resource;
}

/**
 * What a write stores of `input`: hidden and read-only fields as `previous` has them (absent for
 * a create), then the write constraints checked (403 when one is not shown to be true) — in
 * `fhirpath`'s thread when given (a server), else here (tools that serve no caller).
 */
export async function policyWrite(input: Resource, previous: Resource | undefined, rules: FieldRules, fhirpath?: FhirPathEvaluator): Promise<Resource> {
  const kept = [...rules.hidden, ...rules.readonly];
  let out = input;
  if (kept.length > 0) {
    const copy = structuredClone(input) as unknown as Json;
    for (const path of kept) keep(copy, (previous ?? {}) as unknown as Json, path.split('.'));
    out = copy as unknown as Resource;
  }
  for (const constraint of rules.constraints) {
    if (!(await satisfied(constraint, previous, out, fhirpath))) {
      throw new FhirError(403, [issue('forbidden', `Forbidden: the access policy's write constraint is not met: ${describe(constraint)}`)]);
    }
  }
  return out;
}

/**
 * Throws 403 when a search of `resourceType` filters or sorts by a parameter whose expression
 * reads a hidden field (`birthdate` when `birthDate` is hidden; `name` when `name.given` is): the
 * matches would tell what the field holds. Chains and `_has` into the type are not looked at.
 */
export function checkHiddenSearch(resourceType: string, params: ReadonlyArray<[string, string]>, rules: FieldRules): void {
  if (rules.hidden.length === 0) return;
  const codes = params.flatMap(([name, value]) => (name === '_sort' ? value.split(',').map((v) => v.replace(/^-/, '')) : [name.split(/[:.]/)[0]]));
  for (const code of new Set(codes)) {
    const expression = searchParameter(resourceType, code)?.expression;
    if (!expression) continue;
    const paths = [...expressionFor(resourceType, expression).matchAll(new RegExp(`\\b${resourceType}((?:\\.[A-Za-z][A-Za-z0-9]*)+)`, 'g'))].map((m) => m[1].slice(1));
    const hidden = rules.hidden.find((h) => paths.some((p) => p === h || p.startsWith(`${h}.`) || h.startsWith(`${p}.`)));
    if (hidden) throw new FhirError(403, [issue('forbidden', `Forbidden: search parameter '${code}' reads the hidden field ${hidden}`)]);
  }
}

type Json = Record<string, unknown>;

function remove(node: unknown, path: string[]): void {
  if (Array.isArray(node)) {
    for (const item of node) remove(item, path);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Json;
  const [head, ...rest] = path;
  if (rest.length === 0) delete obj[head];
  else remove(obj[head], rest);
}

/** Sets `target`'s value at `path` to `source`'s (removing it where `source` has none). */
function keep(target: Json, source: Json, path: string[]): void {
  const [head, ...rest] = path;
  if (rest.length === 0) {
    if (source[head] === undefined) delete target[head];
    else target[head] = structuredClone(source[head]);
    return;
  }
  const t = target[head];
  const s = source[head];
  if (Array.isArray(t)) {
    t.forEach((item, i) => {
      if (item && typeof item === 'object') keep(item as Json, (Array.isArray(s) && s[i] && typeof s[i] === 'object' ? s[i] : {}) as Json, rest);
    });
  } else if (t && typeof t === 'object') {
    keep(t as Json, (s && typeof s === 'object' && !Array.isArray(s) ? s : {}) as Json, rest);
  }
}

function describe(constraint: Expression): string {
  return constraint.description ?? constraint.expression ?? '';
}

/** True only when the expression evaluates to exactly `true` (an error or empty result is not). */
async function satisfied(constraint: Expression, before: Resource | undefined, after: Resource, fhirpath?: FhirPathEvaluator): Promise<boolean> {
  if (!constraint.expression) return true;
  const vars = { before: before ?? null, after };
  if (!fhirpath) {
    try {
      const result = fhirpathEngine.evaluate(after, constraint.expression, vars, r4, { resolveInternalTypes: false });
      return result.length === 1 && result[0] === true;
    } catch {
      return false;
    }
  }
  let answer: Awaited<ReturnType<FhirPathEvaluator['evaluateValues']>>;
  try {
    answer = await fhirpath.evaluateValues(after, constraint.expression, { vars });
  } catch (err) {
    if (err instanceof EvaluationTimeout) {
      throw new FhirError(403, [issue('forbidden', `Forbidden: the access policy's write constraint was stopped after ${fhirpath.timeoutMs} ms (LATTICE_FHIRPATH_TIMEOUT), so it is not shown to be met: ${describe(constraint)}`)]);
    }
    if (err instanceof EvaluatorBusy) {
      throw new FhirError(503, [issue('transient', `The access policy's write constraint waited ${WAIT_FACTOR * fhirpath.timeoutMs} ms (${WAIT_FACTOR} × LATTICE_FHIRPATH_TIMEOUT) for the FHIRPath evaluator; try again`)], { 'Retry-After': '1' });
    }
    throw err;
  }
  return 'values' in answer && answer.values.length === 1 && answer.values[0] === true;
}
