import { isDeepStrictEqual } from 'node:util';
import type { Resource } from '@medplum/fhirtypes';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { ResourceValidator } from '../core/validation.js';
import { EvaluationTimeout, EvaluatorBusy, WAIT_FACTOR, type FhirPathEvaluator, type ThreadNode } from '../fhir/fhirpath-evaluator.js';
import { structureDefinitionMap } from '../fhir/definitions.js';
import { MAX_JSON_DEPTH, isObject } from '../fhir/json.js';
import { FhirError, badRequest, conflict, issue, notFound, preconditionFailed } from '../fhir/outcome.js';
import { conditionalQuery, singleMatch } from './conditional.js';
import { written } from './crud.js';
import { parseIfMatch } from './headers.js';

type Json = unknown;
type JsonObject = Record<string, unknown>;

/** Attempts of a PATCH without `If-Match` when another write changes the resource meanwhile. */
const PATCH_ATTEMPTS = 10;

/**
 * PATCH [base]/Type/id (and conditional `PATCH [base]/Type?search`), FHIR R4 http.html#patch:
 * a JSON Patch (RFC 6902, an array body, normally `application/json-patch+json`) or a FHIRPath
 * Patch (a Parameters body). The patched resource is validated and stored like an update of the
 * version it was computed from; `If-Match` names that version.
 *
 * The patch is computed outside any database transaction: a FHIRPath path is evaluated in the
 * FHIRPath thread and may take up to its time limit (docs/errors.md#fhirpath-evaluation), which
 * must not hold the database. The write names the version read, so a write by someone else in
 * between is never overwritten: without `If-Match` the patch is computed again on the new
 * version (up to 10 times, then 409); with `If-Match` it is 412 as for any stale version.
 */
export async function patchInteraction(req: FhirRequest, type: string, id: string | undefined, validator: ResourceValidator, fhirpath: FhirPathEvaluator): Promise<FhirResult> {
  const apply = parsePatch(req.body, fhirpath);
  const ifMatch = parseIfMatch(req.headers['if-match']);
  for (let attempt = 1; ; attempt++) {
    let targetId = id;
    if (targetId === undefined) {
      const match = await singleMatch(req.ctx.repo, conditionalQuery(type, req.query, 'Conditional patch'), { locked: false });
      if (!match?.id) throw notFound();
      targetId = match.id;
    }
    const current = await req.ctx.repo.read(type, targetId);
    const version = current.meta?.versionId;
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== version) throw preconditionFailed();
    const patched = await apply(structuredClone(current) as unknown as JsonObject);
    if (!isObject(patched)) throw badRequest('Patch result is not a resource');
    if (patched.resourceType !== type) throw badRequest('Patch must not change resourceType', 'resourceType');
    if (patched.id !== targetId) throw badRequest('Patch must not change id', `${type}.id`);
    const problems = await validator.validate(patched);
    if (problems.length > 0) throw new FhirError(400, problems);
    try {
      const { resource } = await req.ctx.repo.update(patched as unknown as Resource, { ifMatch: version });
      return written(req, resource, 200, false);
    } catch (err) {
      const stale = err instanceof FhirError && err.status === 412;
      if (!stale || (ifMatch !== undefined && ifMatch !== '*')) throw err;
      if (attempt >= PATCH_ATTEMPTS) throw conflict(`${type}/${targetId} changed ${PATCH_ATTEMPTS} times while the patch was applied: try again`);
    }
  }
}

/** The patch document as a function over the current resource; 400 when it is neither kind. */
function parsePatch(body: unknown, fhirpath: FhirPathEvaluator): (doc: JsonObject) => Promise<Json> {
  if (body === undefined) throw badRequest('Request body is empty: expected a JSON Patch or a FHIRPath Patch Parameters resource');
  if (Array.isArray(body)) {
    const ops = body.map(jsonPatchOperation);
    return async (doc) => {
      const budget = { copied: 0 };
      const result = ops.reduce<Json>((current, op, i) => applyJsonPatchOperation(current, op, i, budget), doc);
      if (depthOf(result) > MAX_JSON_DEPTH) throw badRequest(`Patch result is nested too deeply (more than ${MAX_JSON_DEPTH} levels)`);
      return result;
    };
  }
  if (isObject(body) && body.resourceType === 'Parameters') {
    const ops = fhirPathOperations(body);
    return async (doc) => {
      for (const [i, op] of ops.entries()) applyFhirPathOperation(doc, op, i, await evaluatePath(fhirpath, doc, op, i));
      return doc;
    };
  }
  throw badRequest('PATCH body must be a JSON Patch array (application/json-patch+json) or a FHIRPath Patch Parameters resource');
}

// ---------------------------------------------------------------------------------------------
// JSON Patch (RFC 6902)
// ---------------------------------------------------------------------------------------------

interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: Json;
}

const JSON_PATCH_OPS = ['add', 'remove', 'replace', 'move', 'copy', 'test'];

function jsonPatchOperation(raw: unknown, i: number): JsonPatchOperation {
  const prefix = `JSON Patch operation ${i}`;
  if (!isObject(raw)) throw badRequest(`${prefix}: expected an object`);
  const { op, path, from } = raw;
  if (typeof op !== 'string' || !JSON_PATCH_OPS.includes(op)) throw badRequest(`${prefix}: 'op' must be one of ${JSON_PATCH_OPS.join(', ')}`);
  if (typeof path !== 'string') throw badRequest(`${prefix}: 'path' must be a string`);
  pointer(path, i);
  if ((op === 'move' || op === 'copy') && typeof from !== 'string') throw badRequest(`${prefix}: '${op}' needs 'from'`);
  if ((op === 'add' || op === 'replace' || op === 'test') && !('value' in raw)) throw badRequest(`${prefix}: '${op}' needs 'value'`);
  return { op: op as JsonPatchOperation['op'], path, from: typeof from === 'string' ? from : undefined, value: raw.value };
}

/** RFC 6901 pointer → reference tokens. */
function pointer(path: string, i: number): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`JSON Patch operation ${i}: invalid path '${path}' (a JSON pointer starts with '/')`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function missing(i: number, op: string, path: string): FhirError {
  return badRequest(`JSON Patch operation ${i} (${op}): path '${path}' does not exist`);
}

/** The container of the pointer's last token and that token, or an error naming the path. */
function parentOf(doc: Json, path: string, i: number, op: string): [JsonObject | Json[], string] {
  const tokens = pointer(path, i);
  let node: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    node = child(node, token);
    if (node === undefined) throw missing(i, op, path);
  }
  if (!isObject(node) && !Array.isArray(node)) throw missing(i, op, path);
  return [node, tokens[tokens.length - 1]];
}

function child(node: Json, token: string): Json {
  if (Array.isArray(node)) return /^(0|[1-9]\d*)$/.test(token) ? node[Number(token)] : undefined;
  if (isObject(node)) return Object.hasOwn(node, token) ? node[token] : undefined;
  return undefined;
}

function getAt(doc: Json, path: string, i: number, op: string): Json {
  if (path === '') return doc;
  const [parent, token] = parentOf(doc, path, i, op);
  const value = child(parent, token);
  if (value === undefined) throw missing(i, op, path);
  return value;
}

function addAt(doc: Json, path: string, value: Json, i: number, op: string): Json {
  if (path === '') return value;
  const [parent, token] = parentOf(doc, path, i, op);
  if (Array.isArray(parent)) {
    const index = token === '-' ? parent.length : /^(0|[1-9]\d*)$/.test(token) ? Number(token) : NaN;
    if (!(index <= parent.length)) throw missing(i, op, path);
    parent.splice(index, 0, value);
  } else {
    parent[token] = value;
  }
  return doc;
}

function removeAt(doc: Json, path: string, i: number, op: string): Json {
  if (path === '') throw badRequest(`JSON Patch operation ${i} (${op}): cannot remove the whole resource`);
  const [parent, token] = parentOf(doc, path, i, op);
  if (child(parent, token) === undefined) throw missing(i, op, path);
  if (Array.isArray(parent)) parent.splice(Number(token), 1);
  else delete parent[token];
  return doc;
}

/**
 * Most characters of JSON the `copy` operations of one JSON Patch may copy in all: a copy of a
 * list into itself doubles it, so 40 operations would ask for 2^40 times the resource
 * (docs/rest.md#patch). The default body limit: more than a request could send.
 */
export const MAX_PATCH_COPIED = 16 * 1024 * 1024;

/** The size of a value `copy` is about to copy, counted against MAX_PATCH_COPIED. */
function countCopy(value: Json, i: number, budget: { copied: number }): void {
  let size: number;
  try {
    size = JSON.stringify(value)?.length ?? 0;
  } catch {
    size = Infinity; // nested too deep to even measure
  }
  budget.copied += size;
  if (budget.copied > MAX_PATCH_COPIED) {
    throw new FhirError(400, [issue('too-costly', `JSON Patch operation ${i} (copy): the patch copies more than ${MAX_PATCH_COPIED} characters (at most ${MAX_PATCH_COPIED})`)]);
  }
}

/** Deepest nesting of arrays and objects, without recursion. */
function depthOf(value: Json): number {
  let deepest = 0;
  const stack: Array<[Json, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return deepest;
}

function applyJsonPatchOperation(doc: Json, op: JsonPatchOperation, i: number, budget: { copied: number }): Json {
  switch (op.op) {
    case 'add':
      return addAt(doc, op.path, structuredClone(op.value), i, op.op);
    case 'remove':
      return removeAt(doc, op.path, i, op.op);
    case 'replace':
      getAt(doc, op.path, i, op.op);
      if (op.path === '') return structuredClone(op.value);
      return addAt(removeAt(doc, op.path, i, op.op), op.path, structuredClone(op.value), i, op.op);
    case 'move': {
      const from = op.from as string;
      if (op.path.startsWith(`${from}/`)) throw badRequest(`JSON Patch operation ${i} (move): cannot move '${from}' into itself`);
      const value = getAt(doc, from, i, op.op);
      return addAt(removeAt(doc, from, i, op.op), op.path, value, i, op.op);
    }
    case 'copy': {
      const value = getAt(doc, op.from as string, i, op.op);
      countCopy(value, i, budget);
      return addAt(doc, op.path, structuredClone(value), i, op.op);
    }
    case 'test':
      if (!isDeepStrictEqual(getAt(doc, op.path, i, op.op), op.value)) {
        throw new FhirError(422, [issue('processing', `JSON Patch operation ${i} (test) failed at '${op.path}'`)]);
      }
      return doc;
  }
}

// ---------------------------------------------------------------------------------------------
// FHIRPath Patch (FHIR R4 fhirpatch.html): add, insert, delete, replace, move
// ---------------------------------------------------------------------------------------------

interface FhirPathOperation {
  type: 'add' | 'insert' | 'delete' | 'replace' | 'move';
  path: string;
  name?: string;
  value?: Json;
  index?: number;
  source?: number;
  destination?: number;
}

const FHIRPATH_PATCH_TYPES = ['add', 'insert', 'delete', 'replace', 'move'];

interface ParameterPart extends JsonObject {
  name?: string;
  part?: ParameterPart[];
}

function fhirPathOperations(parameters: JsonObject): FhirPathOperation[] {
  const params = (Array.isArray(parameters.parameter) ? parameters.parameter : []) as ParameterPart[];
  if (params.length === 0) throw badRequest('FHIRPath Patch has no operation');
  return params.map((param, i) => {
    const prefix = `FHIRPath Patch operation ${i}`;
    if (param.name !== 'operation') throw badRequest(`${prefix}: parameter name must be 'operation'`, `Parameters.parameter[${i}].name`);
    const parts = param.part ?? [];
    const part = (name: string) => parts.find((p) => p.name === name);
    const type = part('type')?.valueCode;
    if (typeof type !== 'string') throw badRequest(`${prefix}: missing 'type'`);
    if (!FHIRPATH_PATCH_TYPES.includes(type)) {
      throw badRequest(`${prefix}: type '${type}' is not supported (supported: ${FHIRPATH_PATCH_TYPES.join(', ')})`);
    }
    const path = part('path')?.valueString;
    if (typeof path !== 'string' || path === '') throw badRequest(`${prefix}: missing 'path'`);
    checkPathSize(path, prefix);
    const int = (name: string): number | undefined => {
      const v = part(name)?.valueInteger;
      return typeof v === 'number' ? v : undefined;
    };
    const valuePart = part('value');
    const op: FhirPathOperation = {
      type: type as FhirPathOperation['type'],
      path,
      name: typeof part('name')?.valueString === 'string' ? (part('name')?.valueString as string) : undefined,
      value: valuePart ? partValue(valuePart) : undefined,
      index: int('index'),
      source: int('source'),
      destination: int('destination'),
    };
    const need = (ok: boolean, what: string) => {
      if (!ok) throw badRequest(`${prefix}: '${type}' needs '${what}'`);
    };
    if (type === 'add') need(op.name !== undefined, 'name');
    if (type === 'add' || type === 'insert' || type === 'replace') need(op.value !== undefined, 'value');
    if (type === 'insert') need(op.index !== undefined, 'index');
    if (type === 'move') need(op.source !== undefined && op.destination !== undefined, 'source and destination');
    return op;
  });
}

/** Longest FHIRPath Patch path, and deepest nesting of its parentheses and brackets (docs/rest.md#patch). */
export const MAX_PATCH_PATH = { length: 1000, depth: 32 };

/**
 * The path is parsed by the FHIRPath engine, whose parser recurses and slows down with nesting (a
 * path 5,000 `where(` deep took seconds before overflowing the stack): its size is checked first,
 * in one pass.
 */
function checkPathSize(path: string, prefix: string): void {
  const tooCostly = (text: string) => new FhirError(400, [issue('too-costly', `${prefix}: ${text}`)]);
  if (path.length > MAX_PATCH_PATH.length) throw tooCostly(`path is ${path.length} characters long (at most ${MAX_PATCH_PATH.length})`);
  let depth = 0;
  let deepest = 0;
  let quote: string | undefined;
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '`') quote = c;
    else if (c === '(' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === ')' || c === ']') depth = Math.max(0, depth - 1);
  }
  if (deepest > MAX_PATCH_PATH.depth) throw tooCostly(`path nested too deep: ${deepest} levels (at most ${MAX_PATCH_PATH.depth})`);
}

/** `value[x]` of a part, or an object built from its parts (a complex value given part by part). */
function partValue(part: ParameterPart): Json {
  const key = Object.keys(part).find((k) => k.startsWith('value'));
  if (key) return structuredClone(part[key]);
  if (part.part) return Object.fromEntries(part.part.map((p) => [p.name ?? '', partValue(p)]));
  return undefined;
}

/** A node a path names: its data and where it sits (the shape of fhirpath.js's own nodes). */
interface PathNode {
  data: Json;
  path?: string;
  propName?: string;
  index?: number | null;
  fhirNodeDataType?: string;
  parentResNode?: PathNode | null;
}

/**
 * The nodes the operation's path names in `doc`. The path is evaluated in the FHIRPath thread
 * (it answers where each node sits) and the nodes are found again here, in `doc` itself, which
 * the operation then changes.
 */
async function evaluatePath(fhirpath: FhirPathEvaluator, doc: JsonObject, op: FhirPathOperation, i: number): Promise<PathNode[]> {
  let answer: Awaited<ReturnType<FhirPathEvaluator['evaluate']>>;
  try {
    answer = await fhirpath.evaluate(doc, op.path);
  } catch (err) {
    if (err instanceof EvaluationTimeout) {
      throw new FhirError(400, [issue('too-costly', `FHIRPath Patch operation ${i}: evaluating path '${op.path}' was stopped after ${fhirpath.timeoutMs} ms (LATTICE_FHIRPATH_TIMEOUT)`)]);
    }
    if (err instanceof EvaluatorBusy) {
      throw new FhirError(503, [issue('transient', `FHIRPath Patch operation ${i}: the FHIRPath evaluator stayed busy for ${WAIT_FACTOR * fhirpath.timeoutMs} ms (${WAIT_FACTOR} × LATTICE_FHIRPATH_TIMEOUT); try again`)], { 'Retry-After': '1' });
    }
    throw err;
  }
  if ('error' in answer) throw badRequest(`FHIRPath Patch operation ${i}: invalid path '${op.path}'`);
  if (answer.nodes.some((n) => n.location === undefined)) throw badRequest(`FHIRPath Patch operation ${i}: path '${op.path}' does not name elements`);
  return answer.nodes.map((node) => locate(doc, node));
}

/** The node at a location the FHIRPath thread gave, and the object that holds it. */
function locate(doc: JsonObject, node: ThreadNode): PathNode {
  let data: Json = doc;
  let holder: Json = undefined;
  for (const step of node.location ?? []) {
    if (typeof step === 'string') holder = data;
    data = isObject(data) || Array.isArray(data) ? (data as Record<string | number, Json>)[step] : undefined;
  }
  return { data, parentResNode: holder === undefined ? null : { data: holder }, propName: node.propName, index: node.index, path: node.path, fhirNodeDataType: node.type };
}

function onlyNode(nodes: PathNode[], op: FhirPathOperation, i: number): PathNode {
  if (nodes.length === 0) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): path '${op.path}' does not exist`);
  if (nodes.length > 1) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): path '${op.path}' matches ${nodes.length} elements, expected one`);
  return nodes[0];
}

/** The object holding a node and the node's key in it (the resource root has none). */
function slotOf(node: PathNode, op: FhirPathOperation, i: number): { holder: JsonObject; key: string; index: number | undefined } {
  const holder = node.parentResNode?.data;
  if (!isObject(holder) || !node.propName) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): path '${op.path}' is not an element that can be changed`);
  return { holder, key: node.propName, index: typeof node.index === 'number' ? node.index : undefined };
}

/** The list a path names (all nodes must sit in one array). */
function listOf(nodes: PathNode[], op: FhirPathOperation, i: number): Json[] {
  const first = onlyNodeOrList(nodes, op, i);
  const { holder, key } = slotOf(first, op, i);
  const list = holder[key];
  if (!Array.isArray(list)) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): path '${op.path}' is not a list`);
  return list as Json[];
}

function onlyNodeOrList(nodes: PathNode[], op: FhirPathOperation, i: number): PathNode {
  if (nodes.length === 0) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): path '${op.path}' does not exist`);
  return nodes[0];
}

function checkIndex(index: number, max: number, op: FhirPathOperation, i: number, what: string): void {
  if (!Number.isInteger(index) || index < 0 || index > max) throw badRequest(`FHIRPath Patch operation ${i} (${op.type}): ${what} ${index} is out of range`);
}

/** True when `name` under the node's element repeats (max `*` or > 1), from the StructureDefinitions. */
function repeats(node: PathNode, name: string): boolean {
  const sds = structureDefinitionMap();
  const candidates: Array<[string | undefined, string]> = [
    [node.path?.split('.')[0], `${node.path}.${name}`],
    [node.fhirNodeDataType, `${node.fhirNodeDataType}.${name}`],
  ];
  for (const [type, path] of candidates) {
    if (!type) continue;
    const element = sds.get(type)?.snapshot?.element?.find((e) => e.path === path || e.path === `${path}[x]`);
    if (element) return element.max === '*' || Number(element.max) > 1;
  }
  return false;
}

function applyFhirPathOperation(doc: JsonObject, op: FhirPathOperation, i: number, nodes: PathNode[]): void {
  switch (op.type) {
    case 'add': {
      const node = onlyNode(nodes, op, i);
      if (!isObject(node.data)) throw badRequest(`FHIRPath Patch operation ${i} (add): path '${op.path}' is not an element that can hold '${op.name}'`);
      const name = op.name as string;
      const existing = node.data[name];
      if (Array.isArray(existing)) existing.push(op.value);
      else if (existing !== undefined) throw badRequest(`FHIRPath Patch operation ${i} (add): '${name}' already has a value at '${op.path}'`);
      else node.data[name] = repeats(node, name) ? [op.value] : op.value;
      return;
    }
    case 'insert': {
      const list = listOf(nodes, op, i);
      checkIndex(op.index as number, list.length, op, i, 'index');
      list.splice(op.index as number, 0, op.value);
      return;
    }
    case 'delete': {
      const { holder, key, index } = slotOf(onlyNode(nodes, op, i), op, i);
      const value = holder[key];
      if (Array.isArray(value) && index !== undefined) {
        value.splice(index, 1);
        if (value.length === 0) delete holder[key];
      } else delete holder[key];
      return;
    }
    case 'replace': {
      const { holder, key, index } = slotOf(onlyNode(nodes, op, i), op, i);
      const value = holder[key];
      if (Array.isArray(value) && index !== undefined) value[index] = op.value;
      else holder[key] = op.value;
      return;
    }
    case 'move': {
      const list = listOf(nodes, op, i);
      checkIndex(op.source as number, list.length - 1, op, i, 'source');
      checkIndex(op.destination as number, list.length - 1, op, i, 'destination');
      const [moved] = list.splice(op.source as number, 1);
      list.splice(op.destination as number, 0, moved);
      return;
    }
  }
}

