import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { issue, type IssueCode } from '../outcome.js';
import { typeNode, type ChildElement, type ObjectNode } from './element-index.js';
import { baseRuleIssues } from './base-rules.js';
import { jsonKind } from './primitives.js';
import { isResourceType } from './structure-definitions.js';

/** Most issues reported for one resource (the last one says validation stopped). */
export const MAX_ISSUES = 100;
/** Deepest object nesting walked; JSON deeper than any real resource is reported once and skipped. */
export const MAX_DEPTH = 64;

/** Collects issues and enforces the caps. */
class Context {
  readonly issues: OperationOutcomeIssue[] = [];
  stopped = false;
  depthReported = false;
  /** Coding/Identifier systems must be absolute — not in an operation's Parameters, whose operation judges them. */
  checkSystems = true;

  add(code: IssueCode, text: string, expression: string): void {
    if (this.stopped) return;
    if (this.issues.length === MAX_ISSUES - 1) {
      this.issues.push(issue('invalid', `Too many problems: validation stopped after ${MAX_ISSUES - 1} issues`, expression));
      this.stopped = true;
      return;
    }
    this.issues.push(issue(code, text, expression));
  }
}

/**
 * Validates a resource (parsed JSON) against the R4 StructureDefinition of its type.
 * Returns one issue per problem (empty = valid): element names, JSON types, cardinality and
 * primitive formats, then, for a structurally valid resource, the rules of base-rules.ts
 * (extensions, contained resources, Bundle, Questionnaire, QuestionnaireResponse); FHIRPath
 * invariants in general are not checked; required bindings are checked by bindings.ts (docs/rest.md#validation).
 * Never throws; at most {@link MAX_ISSUES} issues.
 */
export function validateResource(resource: unknown): OperationOutcomeIssue[] {
  const issues = validateStructure(resource);
  return issues.length > 0 ? issues : validateBaseRules(resource);
}

/** The base rules of a structurally valid resource (they assume its shapes); never throws. */
export function validateBaseRules(resource: unknown): OperationOutcomeIssue[] {
  try {
    return baseRuleIssues(resource, MAX_DEPTH).slice(0, MAX_ISSUES);
  } catch (err) {
    return [issue('invalid', `Resource could not be validated: ${err instanceof Error ? err.message : String(err)}`, 'resourceType')];
  }
}

/** The structural part of {@link validateResource}: the R4 element definitions only. */
export function validateStructure(resource: unknown): OperationOutcomeIssue[] {
  const ctx = new Context();
  ctx.checkSystems = !isObject(resource) || resource.resourceType !== 'Parameters';
  try {
    validateResourceValue(resource, '', ctx, 0);
  } catch (err) {
    // Not expected for parsed JSON; exotic inputs (throwing getters, proxies) must still not escape.
    ctx.stopped = false;
    ctx.add('invalid', `Resource could not be validated: ${err instanceof Error ? err.message : String(err)}`, 'resourceType');
  }
  return ctx.issues;
}

/** A resource at the root (`expr` = '') or nested (`contained[0]`, `Bundle.entry[0].resource`). */
function validateResourceValue(value: unknown, expr: string, ctx: Context, depth: number): void {
  const rtExpr = expr ? `${expr}.resourceType` : 'resourceType';
  if (!isObject(value)) {
    ctx.add('structure', `Expected a resource (JSON object), got ${jsonKind(value)}`, expr || 'resourceType');
    return;
  }
  const rt = value.resourceType;
  if (rt === undefined) {
    ctx.add('required', 'Missing resourceType', rtExpr);
    return;
  }
  if (typeof rt !== 'string') {
    ctx.add('structure', `resourceType must be a string, got ${jsonKind(rt)}`, rtExpr);
    return;
  }
  const node = isResourceType(rt) ? typeNode(rt) : undefined;
  if (!node) {
    ctx.add('value', `Unknown resource type: ${rt}`, rtExpr);
    return;
  }
  validateObject(value, node, expr || rt, ctx, depth, true);
}

/** The properties of one JSON object against `node`: unknown, missing, and each value. */
function validateObject(
  obj: Record<string, unknown>,
  node: ObjectNode,
  expr: string,
  ctx: Context,
  depth: number,
  isResource: boolean,
): void {
  if (depth >= MAX_DEPTH) {
    if (!ctx.depthReported) ctx.add('invalid', `Maximum nesting depth (${MAX_DEPTH}) exceeded`, expr);
    ctx.depthReported = true;
    return;
  }
  let present = 0;
  let choiceSeen: Map<string, string> | undefined;
  for (const key of Object.keys(obj)) {
    if (ctx.stopped) return;
    const value = obj[key];
    // Not JSON, but callers may pass JS objects: an undefined property is absent (as JSON.stringify has it).
    if (value === undefined) continue;
    present++;
    const child = node.children.get(key);
    if (child) {
      if (child.name.endsWith('[x]')) {
        // Only one type of a choice element may be present (valueString and valueQuantity clash).
        choiceSeen ??= new Map();
        const other = choiceSeen.get(child.name);
        if (other) ctx.add('structure', `Only one of ${other} and ${key} may be present (${child.name})`, `${expr}.${key}`);
        else choiceSeen.set(child.name, key);
      }
      validateProperty(value, obj[`_${key}`], child, `${expr}.${key}`, ctx, depth);
    } else if (key === 'resourceType' && isResource) {
      continue;
    } else if (key.charCodeAt(0) === 95 /* _ */ && node.children.get(key.slice(1))?.primitive) {
      const primitiveChild = node.children.get(key.slice(1)) as ChildElement;
      validatePrimitiveExtensions(value, obj[primitiveChild.key], primitiveChild, `${expr}.${primitiveChild.key}`, ctx, depth);
    } else {
      ctx.add('structure', unknownElementText(key, node), `${expr}.${key}`);
    }
  }
  if (present === 0) {
    ctx.add('structure', 'Empty object: FHIR JSON does not allow {}', expr);
    return;
  }
  for (const req of node.required) {
    if (!req.keys.some((k) => obj[k] !== undefined || obj[`_${k}`] !== undefined)) {
      const name = req.name.endsWith('[x]') ? req.name.slice(0, -3) : req.name;
      ctx.add('required', `Missing required element '${req.name}'`, `${expr}.${name}`);
    }
  }
}

/** One property value: array-ness, cardinality, nulls, then each item. */
function validateProperty(
  value: unknown,
  extensions: unknown,
  child: ChildElement,
  expr: string,
  ctx: Context,
  depth: number,
): void {
  if (value === null) {
    ctx.add('structure', `Null value for '${child.key}': omit the element instead`, expr);
    return;
  }
  if (!child.array) {
    if (Array.isArray(value)) {
      ctx.add('structure', `Element '${child.key}' has max cardinality 1 and must not be an array`, expr);
      return;
    }
    validateItem(value, child, expr, ctx, depth);
    return;
  }
  if (!Array.isArray(value)) {
    ctx.add('structure', `Element '${child.key}' repeats and must be a JSON array, got ${jsonKind(value)}`, expr);
    return;
  }
  if (value.length === 0) {
    ctx.add('structure', `Empty array for '${child.key}': omit the element instead`, expr);
    return;
  }
  if (value.length > child.max) {
    ctx.add('structure', `Element '${child.key}' has ${value.length} items; at most ${child.max} allowed`, expr);
  }
  const aligned = child.primitive && Array.isArray(extensions) ? extensions : undefined;
  for (let i = 0; i < value.length && !ctx.stopped; i++) {
    const item: unknown = value[i];
    if (item === null || item === undefined) {
      // In a primitive array, null is the placeholder for an item that has only `_key` extensions.
      if (!isObject(aligned?.[i])) {
        ctx.add('structure', `Null item in '${child.key}'${child.primitive ? ` without a matching '_${child.key}' entry` : ''}`, `${expr}[${i}]`);
      }
      continue;
    }
    validateItem(item, child, `${expr}[${i}]`, ctx, depth);
  }
}

/** A single (non-array) value of the child's type. */
function validateItem(value: unknown, child: ChildElement, expr: string, ctx: Context, depth: number): void {
  if (child.primitive) {
    const problem = child.primitive.check(value);
    if (problem) ctx.add(problem.code, problem.text, expr);
    return;
  }
  if (child.resource) {
    validateResourceValue(value, expr, ctx, depth + 1);
    return;
  }
  if (!isObject(value)) {
    ctx.add('structure', `Expected an object (FHIR ${child.type}), got ${jsonKind(value)}`, expr);
    return;
  }
  const node = child.node();
  if (node) validateObject(value, node, expr, ctx, depth + 1, false);
  // As the reference validator: a code system or identifier namespace is an absolute URI.
  if (ctx.checkSystems && (child.type === 'Coding' || child.type === 'Identifier') && typeof value.system === 'string' && !ABSOLUTE_URI.test(value.system)) {
    ctx.add('value', `${child.type}.system must be an absolute URI, not the local reference '${value.system}'`, `${expr}.system`);
  }
}

/** A scheme first (`http:`, `urn:`, …): not a relative reference. */
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * `_key` siblings of primitives hold `{ id?, extension? }`; for repeating primitives they are arrays
 * aligned index-for-index with the values, with null where an item has no extensions.
 */
function validatePrimitiveExtensions(
  value: unknown,
  primitives: unknown,
  child: ChildElement,
  expr: string,
  ctx: Context,
  depth: number,
): void {
  const key = `_${child.key}`;
  const element = typeNode('Element') as ObjectNode;
  if (!child.array) {
    if (isObject(value)) validateObject(value, element, expr, ctx, depth + 1, false);
    else ctx.add('structure', `Expected an object with id/extension for '${key}', got ${jsonKind(value)}`, expr);
    return;
  }
  if (!Array.isArray(value)) {
    ctx.add('structure', `Element '${key}' must be a JSON array aligned with '${child.key}', got ${jsonKind(value)}`, expr);
    return;
  }
  if (value.length === 0) {
    ctx.add('structure', `Empty array for '${key}': omit the element instead`, expr);
    return;
  }
  if (Array.isArray(primitives) && primitives.length !== value.length) {
    ctx.add('structure', `'${key}' has ${value.length} items but '${child.key}' has ${primitives.length}; they must align`, expr);
  }
  const values = Array.isArray(primitives) ? primitives : undefined;
  for (let i = 0; i < value.length && !ctx.stopped; i++) {
    const item: unknown = value[i];
    if (item === null) {
      // Both null: already reported on the value array.
      if (values?.[i] === undefined) {
        ctx.add('structure', `Null item in '${key}' without a matching '${child.key}' value`, `${expr}[${i}]`);
      }
    } else if (isObject(item)) {
      validateObject(item, element, `${expr}[${i}]`, ctx, depth + 1, false);
    } else {
      ctx.add('structure', `Expected an object with id/extension in '${key}', got ${jsonKind(item)}`, `${expr}[${i}]`);
    }
  }
}

function unknownElementText(key: string, node: ObjectNode): string {
  for (const [base, keys] of node.choices) {
    if (key.length > base.length && key.startsWith(base) && /^[A-Z]/.test(key.slice(base.length))) {
      const allowed = keys.length <= 8 ? `: use one of ${keys.join(', ')}` : '';
      return `Unknown element '${key}': ${base}[x] does not allow type ${key.slice(base.length)}${allowed}`;
    }
  }
  return `Unknown element '${key}' in ${node.path}`;
}

