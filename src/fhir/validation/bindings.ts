import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { BindingChecker, ResourceValidator, ValueSetCodes } from '../../core/validation.js';
import { isObject } from '../json.js';
import { issue } from '../outcome.js';
import { typeNode, type ObjectNode } from './element-index.js';
import { MAX_DEPTH, MAX_ISSUES, validateBaseRules, validateStructure } from './validate-resource.js';
import { isResourceType } from './structure-definitions.js';
import { questionnaireLookupIssues } from './questionnaire-lookup.js';

/** One coded value under a `required` binding. */
interface BoundValue {
  valueSet: string;
  /** FHIRPath of the element, e.g. `Patient.gender`, `Observation.status`. */
  expression: string;
  /** The codes given: one for `code`/`Coding`, each coding of a `CodeableConcept` (any one may match). */
  codes: Array<{ system: string | undefined; code: string }>;
}

/**
 * The resource validator of create, update, patch and `$validate` (docs/rest.md#validation): the
 * structural check of the R4 StructureDefinitions, then — for a structurally valid resource —
 * the `required` bindings of `code`, `Coding` and `CodeableConcept` elements against the value
 * sets' codes, as the `checker` (the terminology engine, wired by src/app.ts) gives them.
 * A binding whose value set the checker cannot resolve is not checked. Then a
 * QuestionnaireResponse against its Questionnaire, looked up in the caller's repository
 * (questionnaire-lookup.ts).
 */
export function createResourceValidator(checker: BindingChecker): ResourceValidator {
  return {
    async validate(resource, context) {
      // Bindings and Questionnaires are read from a structurally valid resource, whatever the base rules say.
      const problems = validateStructure(resource);
      if (problems.length > 0) return problems;
      return [...validateBaseRules(resource), ...(await bindingIssues(resource, checker)), ...(await questionnaireLookupIssues(resource, context?.repo, checker))];
    },
    async prepare(resourceTypes) {
      const valueSets = new Set(resourceTypes.flatMap((t) => boundValueSets(t)));
      const loaded = valueSets.size > 0 ? await checker.codesOf([...valueSets]) : new Map<string, ValueSetCodes | undefined>();
      return createResourceValidator({ codesOf: async (wanted) => new Map(wanted.map((v) => [v, loaded.get(v)])) });
    },
  };
}

/** The resource types of every resource object inside `value` (itself, contained, Bundle entries, patch values), for `prepare`. */
export function resourceTypesIn(value: unknown): string[] {
  const types = new Set<string>();
  const walk = (v: unknown, depth: number) => {
    if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1);
      return;
    }
    const obj = v as Record<string, unknown>;
    if (typeof obj.resourceType === 'string' && isResourceType(obj.resourceType)) types.add(obj.resourceType);
    for (const item of Object.values(obj)) walk(item, depth + 1);
  };
  walk(value, 0);
  return [...types];
}

const boundByType = new Map<string, string[]>();

/** Every value set a required binding names anywhere in a resource of `type` (its datatypes included; contained resources not). */
export function boundValueSets(type: string): string[] {
  let found = boundByType.get(type);
  if (!found) {
    const valueSets = new Set<string>();
    const seen = new Set<ObjectNode>();
    const visit = (node: ObjectNode | undefined) => {
      if (!node || seen.has(node)) return;
      seen.add(node);
      for (const child of node.children.values()) {
        if (child.binding) valueSets.add(child.binding);
        if (!child.primitive && !child.resource) visit(child.node());
      }
    };
    visit(isResourceType(type) ? typeNode(type) : undefined);
    found = [...valueSets];
    boundByType.set(type, found);
  }
  return found;
}

/** Issues of the `required` bindings of a structurally valid resource. */
export async function bindingIssues(resource: unknown, checker: BindingChecker): Promise<OperationOutcomeIssue[]> {
  const values: BoundValue[] = [];
  if (isObject(resource) && typeof resource.resourceType === 'string') collectResource(resource, resource.resourceType, values, 0);
  if (values.length === 0) return [];
  const codes = await checker.codesOf([...new Set(values.map((v) => v.valueSet))]);
  const issues: OperationOutcomeIssue[] = [];
  for (const value of values) {
    const members = codes.get(value.valueSet);
    if (!members || value.codes.some((c) => members.has(c.system, c.code))) continue;
    const shown = value.codes.map((c) => (c.system ? `${c.system}|${c.code}` : c.code)).join("', '");
    issues.push(issue('value', `Value '${shown}' is not in the required value set ${value.valueSet}`, value.expression));
    if (issues.length >= MAX_ISSUES) break;
  }
  return issues;
}

function collectResource(resource: Record<string, unknown>, expr: string, out: BoundValue[], depth: number): void {
  const type = resource.resourceType;
  const node = typeof type === 'string' && isResourceType(type) ? typeNode(type) : undefined;
  if (node) collectObject(resource, node, expr, out, depth);
}

function collectObject(obj: Record<string, unknown>, node: ObjectNode, expr: string, out: BoundValue[], depth: number): void {
  if (depth >= MAX_DEPTH) return;
  for (const [key, value] of Object.entries(obj)) {
    const child = node.children.get(key);
    if (!child || value === undefined || value === null) continue;
    const items = Array.isArray(value) ? value.map((v: unknown, i) => [v, `${expr}.${key}[${i}]`] as const) : [[value, `${expr}.${key}`] as const];
    for (const [item, at] of items) {
      if (child.binding) {
        const codes = codesOf(child.type, item);
        if (codes.length > 0) out.push({ valueSet: child.binding, expression: at, codes });
      }
      if (!isObject(item)) continue;
      if (child.resource) collectResource(item, at, out, depth + 1);
      else if (!child.primitive) {
        const inner = child.node();
        if (inner) collectObject(item, inner, at, out, depth + 1);
      }
    }
  }
}

/** The codes of one bound value (`code` string, `Coding`, `CodeableConcept`); empty when it carries none. */
function codesOf(type: string, value: unknown): BoundValue['codes'] {
  const coding = (c: unknown) =>
    isObject(c) && typeof c.code === 'string' ? [{ system: typeof c.system === 'string' ? c.system : undefined, code: c.code }] : [];
  if (type === 'code') return typeof value === 'string' ? [{ system: undefined, code: value }] : [];
  if (type === 'Coding') return coding(value);
  return isObject(value) && Array.isArray(value.coding) ? value.coding.flatMap(coding) : [];
}
