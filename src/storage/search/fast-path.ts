import r4 from 'fhirpath/fhir-context/r4';

/**
 * A direct evaluator for the plain search expressions (docs/rest.md#cost-of-a-request): a
 * resource type followed by element names, `ofType(T)`, `where(<element>='<text>')` and
 * `where(reference.matches('<regex>'))` — 3 of 4 expression branches of the R4 search
 * parameters, every one of a Patient's. It walks the JSON and types each result from the R4
 * model the way the FHIRPath engine does (the same `fhirNodeDataType`, so index rows are the
 * same), without the engine's per-node contexts. Whatever it does not know how to mirror exactly
 * (a primitive's `_element` extension data, a number, a value without a model type under `ofType`) makes
 * it answer `undefined` for that resource, and the engine evaluates it instead.
 */

/** A result item: the shape of the engine's ResourceNode that fhir-values.ts `typedValue` reads. */
export interface FastNode {
  data: unknown;
  fhirNodeDataType: string | null;
  parentResNode: null;
  /** The model path of the node (the engine's `path`): where its children's types are found. */
  path: string;
}

type Step =
  | { kind: 'member'; name: Member }
  | { kind: 'ofType'; type: string }
  | { kind: 'whereEquals'; name: Member; value: string }
  | { kind: 'whereMatches'; name: Member; regex: RegExp };

/**
 * An element name of an expression, with what the R4 model says about it under each parent
 * path it was read from (`children` looks the model up once per parent path, not per node).
 */
interface Member {
  name: string;
  byParent: Map<string, Child>;
}

/** Where child `name` of a parent path is found: its JSON fields (one per choice type, else the name), each typed. */
interface Child {
  fields: Array<{ field: string; extension: string; type: string | null; next: string }>;
}

/** Parent paths remembered per member at most. */
const MAX_PARENTS = 64;

function member(name: string): Member {
  return { name, byParent: new Map() };
}

/** Evaluates from the resource (its type must be the expression's first name); undefined: ask the engine. */
export type FastExpression = (resource: unknown) => FastNode[] | undefined;

interface Model {
  choiceTypePaths: Record<string, string[] | undefined>;
  pathsDefinedElsewhere: Record<string, string | undefined>;
  path2Type: Record<string, string | undefined>;
  path2TypeWithoutElements: Record<string, string | undefined>;
  type2Parent: Record<string, string | undefined>;
}
const MODEL = r4 as unknown as Model;

/** Thrown inside an evaluation that the engine must do instead (one instance: no stack to capture each time). */
const UNSUPPORTED = new Error('left to the FHIRPath engine');

/** Compiles `expression` (one branch of a union), or undefined when it is not of the plain forms. */
export function compileFast(expression: string): FastExpression | undefined {
  const parsed = parse(expression);
  if (!parsed) return undefined;
  const { root, steps } = parsed;
  return (resource) => {
    const type = (resource as { resourceType?: unknown } | null)?.resourceType;
    if (type !== root) return [];
    try {
      return run([node(resource, root, root)], steps);
    } catch (err) {
      if (err === UNSUPPORTED) return undefined;
      throw err;
    }
  };
}

/**
 * Compiles `expression` relative to an item (a composite's component, e.g. `value.ofType(Quantity)`
 * of one `Observation.component`); undefined when it is not of the plain forms.
 */
export function compileFastRelative(expression: string): ((item: FastNode) => FastNode[] | undefined) | undefined {
  const branches = splitUnion(expression).map((branch) => parse(`Root.${branch}`)?.steps);
  if (branches.length === 0 || branches.some((steps) => !steps)) return undefined;
  return (item) => {
    try {
      const found = branches.flatMap((steps) => run([item], steps as Step[]));
      return branches.length > 1 ? distinct(found) : found;
    } catch (err) {
      if (err === UNSUPPORTED) return undefined;
      throw err;
    }
  };
}

/** `nodes` with equal items kept once (the engine's `|`). */
export function distinct(nodes: FastNode[]): FastNode[] {
  const seen = new Set<string>();
  return nodes.filter((n) => {
    const key = JSON.stringify(n.data);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Splits on `|` outside parentheses and quotes (parameters.ts splits the R4 expressions with it too). */
export function splitUnion(expression: string): string[] {
  return (splitOutside(expression, '|', false) ?? [expression]).map((part) => part.trim());
}

function node(data: unknown, path: string, type: string | null): FastNode {
  // The engine wraps a number in a decimal object of its own: left to it.
  if (typeof data === 'number') throw UNSUPPORTED;
  // A resource inside a resource (contained, Bundle.entry.resource) is typed by its resourceType.
  const resourceType = (data as { resourceType?: unknown } | null)?.resourceType;
  if (typeof resourceType === 'string' && resourceType) return { data, fhirNodeDataType: resourceType, parentResNode: null, path: resourceType };
  return { data, fhirNodeDataType: type, parentResNode: null, path };
}

function run(start: FastNode[], steps: Step[]): FastNode[] {
  let nodes = start;
  for (const step of steps) {
    if (nodes.length === 0) return nodes;
    switch (step.kind) {
      case 'member':
        nodes = nodes.flatMap((n) => children(n, step.name));
        break;
      case 'ofType':
        nodes = nodes.filter((n) => {
          if (!n.fhirNodeDataType) throw UNSUPPORTED;
          return isType(n.fhirNodeDataType, step.type);
        });
        break;
      case 'whereEquals':
        nodes = nodes.filter((n) => singleString(n, step.name) === step.value);
        break;
      case 'whereMatches':
        nodes = nodes.filter((n) => {
          const text = singleString(n, step.name);
          return text !== undefined && step.regex.test(text);
        });
        break;
    }
  }
  return nodes;
}

/** The child nodes `member` of `parent`, typed as the engine types them (its makeChildResNodes). */
function children(parent: FastNode, member: Member): FastNode[] {
  const data = parent.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return [];
  const object = data as Record<string, unknown>;
  let child = member.byParent.get(parent.path);
  if (!child) {
    child = resolveChild(parent.path, member.name);
    // A contained resource's path is its resourceType, which the data names: kept within bounds.
    if (member.byParent.size < MAX_PARENTS) member.byParent.set(parent.path, child);
  }
  // A choice element takes the first of its types present (`value` → `valueQuantity`, …).
  for (const { field, extension, type, next } of child.fields) {
    if (object[extension] !== undefined) throw UNSUPPORTED;
    const value = object[field];
    if (value === undefined) continue;
    if (value === null) return [];
    if (!Array.isArray(value)) return [node(value, next, type)];
    const out: FastNode[] = [];
    for (const item of value) if (item !== null && item !== undefined) out.push(node(item, next, type));
    return out;
  }
  return [];
}

/** What the R4 model says about child `name` of `parentPath` (see {@link Child}). */
function resolveChild(parentPath: string, name: string): Child {
  let path = parentPath + '.' + name;
  path = MODEL.pathsDefinedElsewhere[path] ?? path;
  const typed = (field: string, at: string) => ({ field, extension: '_' + field, type: MODEL.path2Type[at] ?? null, next: MODEL.path2TypeWithoutElements[at] ?? at });
  const choices = MODEL.choiceTypePaths[path];
  if (choices) return { fields: choices.map((t) => typed(name + t, path + t)) };
  return { fields: [typed(name, name === 'extension' ? 'Extension' : path)] };
}

/** The one string value of child `name` (a `where` condition's operand); undefined when absent. */
function singleString(n: FastNode, name: Member): string | undefined {
  const values = children(n, name);
  if (values.length === 0) return undefined;
  if (values.length > 1 || typeof values[0].data !== 'string') throw UNSUPPORTED;
  return values[0].data;
}

/** `type` is `wanted` or derives from it in the R4 model (what the engine's `ofType` checks). */
function isType(type: string, wanted: string): boolean {
  for (let t: string | undefined = type; t; t = MODEL.type2Parent[t]) if (t === wanted) return true;
  return false;
}

const NAME = /^[a-z][A-Za-z0-9]*$/;
const OF_TYPE = /^ofType\(\s*([A-Za-z][A-Za-z0-9]*)\s*\)$/;
const WHERE_EQUALS = /^where\(\s*([a-z][A-Za-z0-9]*)\s*=\s*'([^'\\]*)'\s*\)$/;
const WHERE_MATCHES = /^where\(\s*([a-z][A-Za-z0-9]*)\.matches\(\s*'([^'\\]*)'\s*\)\s*\)$/;
/** Names the engine reads as functions or keywords, never as elements. */
const KEYWORDS = new Set(['as', 'is', 'and', 'or', 'xor', 'implies', 'div', 'mod', 'in', 'contains', 'true', 'false']);

function parse(expression: string): { root: string; steps: Step[] } | undefined {
  const segments = splitPath(unwrap(expression.trim()));
  if (!segments || !/^[A-Z][A-Za-z]*$/.test(segments[0])) return undefined;
  const steps: Step[] = [];
  for (const segment of segments.slice(1)) {
    let m: RegExpExecArray | null;
    if (NAME.test(segment) && !KEYWORDS.has(segment)) steps.push({ kind: 'member', name: member(segment) });
    else if ((m = OF_TYPE.exec(segment))) steps.push({ kind: 'ofType', type: m[1] });
    else if ((m = WHERE_EQUALS.exec(segment))) steps.push({ kind: 'whereEquals', name: member(m[1]), value: m[2] });
    else if ((m = WHERE_MATCHES.exec(segment))) {
      let regex: RegExp;
      try {
        regex = new RegExp(m[2], 'us'); // the engine's flags for matches() without flags
      } catch {
        return undefined;
      }
      steps.push({ kind: 'whereMatches', name: member(m[1]), regex });
    } else return undefined;
  }
  return { root: segments[0], steps };
}

/** `(A.b.ofType(T)).c` → `A.b.ofType(T).c`: parentheses around a leading path change nothing. */
function unwrap(expression: string): string {
  let text = expression;
  while (text.startsWith('(')) {
    const close = closing(text, 0);
    if (close < 0) return text;
    const rest = text.slice(close + 1);
    if (rest !== '' && !rest.startsWith('.')) return text;
    text = text.slice(1, close).trim() + rest;
  }
  return text;
}

/** Index of the parenthesis closing the one at `open`, or -1. */
function closing(text: string, open: number): number {
  let depth = 0;
  let quoted = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** Splits on `.` outside parentheses and quotes; undefined when unbalanced or with spaces outside them. */
function splitPath(text: string): string[] | undefined {
  const parts = splitOutside(text, '.', true);
  return parts?.some((p) => p === '') ? undefined : parts;
}

/**
 * Splits `text` on `separator` where it stands outside parentheses and single quotes (a `\`
 * escapes inside quotes). `strict`: undefined when the text is unbalanced or has white space
 * outside them.
 */
function splitOutside(text: string, separator: string, strict: boolean): string[] | undefined {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0 && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    } else if (strict && depth === 0 && /\s/.test(c)) return undefined;
    if (strict && depth < 0) return undefined;
  }
  if (strict && (depth !== 0 || quoted)) return undefined;
  parts.push(text.slice(start));
  return parts;
}
