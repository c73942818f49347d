import type { ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import type { Concept, StoredProperty, TermContext } from '../../types.js';
import { filterOp } from '../filters.js';
import type { ConceptSelection } from '../provider.js';
import { eclSelects, type VirtualConcept } from './ecl/evaluate.js';
import { EclSyntaxError } from './ecl/parser.js';
import { checkExpression, displayExpression, isPostcoordinated, parseExpression, printExpression, virtualConcept, type PostcoordinatedExpression } from './expression/expression.js';
import type { SnomedGraph } from './sct-index.js';

/**
 * Postcoordinated expressions as codes (docs/terminology.md#snomed-ct): a code such as
 * `128241005:{363698007=181268008}` that parses as Compositional Grammar and whose concepts
 * the edition has, active, is a concept of the edition for the request — a *virtual* concept
 * with an id of its own (above every real id, kept per request and edition), its display the
 * expression with each concept's preferred term, its parents the focus concepts, its
 * attributes the refinement's and the focus concepts' others. A value set admits it when its
 * include lists the same expression, or selects it by hierarchy (`is-a`, `descendent-of` of an
 * ancestor of its focus) or ECL, unless the include says `expressions = false`; other filters
 * (refsets, property values) never select one.
 */

/** Virtual ids start here (real ids are below 2^30). */
const VIRTUAL_BASE = 0x40000000;

export interface Virtual {
  id: number;
  code: string;
  expression: PostcoordinatedExpression;
  concept: VirtualConcept;
  display: string;
}

/** Per request, per edition (code-system key): the virtual concepts found so far. */
const registries = new WeakMap<TermContext, Map<number, Virtual[]>>();

function registry(tc: TermContext, key: number): Virtual[] {
  let byKey = registries.get(tc);
  if (!byKey) registries.set(tc, (byKey = new Map<number, Virtual[]>()));
  let list = byKey.get(key);
  if (!list) byKey.set(key, (list = []));
  return list;
}

export function isVirtualId(id: number): boolean {
  return id >= VIRTUAL_BASE;
}

export function virtualById(tc: TermContext, key: number, id: number): Virtual | undefined {
  return registry(tc, key)[id - VIRTUAL_BASE];
}

/** The virtual concept of an expression code, or undefined when it is no valid expression here. */
export function findExpression(tc: TermContext, key: number, graph: SnomedGraph, code: string): Virtual | undefined {
  if (!isPostcoordinated(code)) return undefined;
  const list = registry(tc, key);
  const known = list.find((v) => v.code === code);
  if (known) return known;
  let expression: PostcoordinatedExpression;
  try {
    expression = parseExpression(code);
  } catch {
    return undefined;
  }
  if (checkExpression(graph, expression).length > 0) return undefined;
  const concept = virtualConcept(graph, expression);
  if (!concept) return undefined;
  const display = displayExpression(expression, (sctid) => {
    const id = graph.resolve(sctid);
    return id !== undefined && graph.isConcept(id) ? graph.index.display(id) : undefined;
  });
  const v: Virtual = { id: VIRTUAL_BASE + list.length, code, expression, concept, display };
  list.push(v);
  return v;
}

export function virtualAsConcept(v: Virtual): Concept {
  return { id: v.id, code: v.code, display: v.display, definition: undefined, inactive: false, abstract: false, status: undefined };
}

/** Its attributes (with a concept value) and concrete values as properties. */
export function virtualProperties(graph: SnomedGraph, v: Virtual): StoredProperty[] {
  const out: StoredProperty[] = [];
  for (const [, type, value] of v.concept.attributes) {
    if (typeof value === 'number') out.push({ code: graph.sctid(type), type: 'code', value: graph.sctid(value), system: undefined, display: undefined });
  }
  for (const c of v.concept.concrete) {
    const type = typeof c.value === 'number' ? (Number.isInteger(c.value) ? 'integer' : 'decimal') : typeof c.value === 'boolean' ? 'boolean' : 'string';
    out.push({ code: graph.sctid(c.typeId), type, value: String(c.value), system: undefined, display: undefined });
  }
  return out;
}

/** Whether `ancestor` (a real id) is a focus concept of the expression or one of their ancestors. */
export function virtualHasAncestor(graph: SnomedGraph, v: Virtual, ancestor: number): boolean {
  return v.concept.parents.some((p) => p === ancestor || graph.index.isAncestor(ancestor, p));
}

/** Whether an include admits the expression (see the module comment). */
export async function virtualSelected(graph: SnomedGraph, v: Virtual, selection: ConceptSelection): Promise<boolean> {
  const inc = selection.include;
  if (inc.concept) {
    const canonical = printExpression(v.expression);
    const listed = inc.concept.some((c) => {
      if (c.code === v.code) return true;
      try {
        return typeof c.code === 'string' && isPostcoordinated(c.code) && printExpression(parseExpression(c.code)) === canonical;
      } catch {
        return false;
      }
    });
    if (!listed) return false;
  }
  for (const f of inc.filter ?? []) if (!(await filterSelects(graph, v, f))) return false;
  return true;
}

async function filterSelects(graph: SnomedGraph, v: Virtual, f: ValueSetComposeIncludeFilter): Promise<boolean> {
  const op = filterOp(f) ?? '';
  const value = typeof f.value === 'string' ? f.value.trim() : '';
  switch (f.property) {
    case 'expressions':
      return op === '=' && value === 'true';
    case 'concept': {
      if (op !== 'is-a' && op !== 'descendent-of') return false;
      const id = graph.resolve(value);
      return id !== undefined && virtualHasAncestor(graph, v, id);
    }
    case 'constraint':
    case 'expression':
      if (op !== '=') return false;
      try {
        return await eclSelects(graph, value, v.concept);
      } catch (err) {
        if (err instanceof EclSyntaxError) return false; // the same filter on real concepts reports it
        throw err;
      }
    default:
      return false;
  }
}

/** An include's `expressions = false` filter leaves expressions out; the filter is no condition on real concepts. */
export function withoutExpressionsFilter(selection: ConceptSelection): ConceptSelection {
  const filters = selection.include.filter;
  if (!filters?.some((f) => f.property === 'expressions')) return selection;
  const rest = filters.filter((f) => f.property !== 'expressions');
  return { ...selection, include: { ...selection.include, filter: rest.length > 0 ? rest : undefined } };
}
