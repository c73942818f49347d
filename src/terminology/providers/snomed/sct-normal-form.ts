import type { ExprAttribute, PostcoordinatedExpression } from './expression/expression.js';
import { displayExpression, printExpression } from './expression/expression.js';
import type { SnomedGraph } from './sct-index.js';
import { SCTID } from './sct-meta.js';

/**
 * A concept's necessary normal form (docs/terminology.md#answers), the `normalForm` and
 * `normalFormTerse` properties: its proximal primitive supertypes as focus concepts, refined
 * by every attribute of its inferred form (ungrouped ones, then the role groups) and its
 * concrete values; `<<<` before a primitive concept's (the form is necessary, not
 * sufficient), nothing before a fully defined one's (equivalence is the default).
 */
export function normalForm(graph: SnomedGraph, id: number): PostcoordinatedExpression {
  const primitive = (x: number) => graph.sctid(graph.definitionStatus(x)) !== SCTID.defined;
  // Proximal primitive supertypes: the primitive ancestors no other of them is below.
  const candidates = Array.from(graph.ancestors(id)).filter((a) => a !== id && primitive(a));
  const proximal = candidates.filter((p) => !candidates.some((q) => q !== p && Array.from(graph.ancestors(q)).includes(p)));
  const ref = (x: number) => ({ sctid: graph.sctid(x), pos: 0 });
  const groups = new Map<number, ExprAttribute[]>();
  const add = (group: number, a: ExprAttribute) => groups.set(group, [...(groups.get(group) ?? []), a]);
  const attributes = graph.attributes(id);
  for (let i = 0; i < attributes.length; i += 3) add(attributes[i], { name: ref(attributes[i + 1]), value: { kind: 'concept', concept: ref(attributes[i + 2]) } });
  for (const c of graph.concreteValues(id)) {
    if (typeof c.value === 'number') add(c.group, { name: ref(c.typeId), value: { kind: 'number', value: c.value, text: String(c.value) } });
    else if (typeof c.value === 'string') add(c.group, { name: ref(c.typeId), value: { kind: 'string', value: c.value } });
  }
  const bySctid = (a: ExprAttribute, b: ExprAttribute) => compareSctid(a.name.sctid, b.name.sctid) || (valueKey(a) < valueKey(b) ? -1 : valueKey(a) > valueKey(b) ? 1 : 0);
  return {
    ...(primitive(id) ? { definitionStatus: 'subtypeOf' as const } : {}),
    // The root has no supertype: it is its own focus.
    focus: (proximal.length > 0 ? proximal : [id]).map(ref).sort((a, b) => compareSctid(a.sctid, b.sctid)),
    attributes: (groups.get(0) ?? []).sort(bySctid),
    groups: [...groups.entries()]
      .filter(([g]) => g !== 0)
      .sort((a, b) => a[0] - b[0])
      .map(([, list]) => list.sort(bySctid)),
  };
}

/** The normal form with each concept's preferred term in bars: `64572001|Disease|:{363698007|Finding site|=…}`. */
export function normalFormText(graph: SnomedGraph, id: number): string {
  return displayExpression(normalForm(graph, id), (sctid) => {
    const x = graph.resolve(sctid);
    return x !== undefined && graph.isConcept(x) ? graph.index.display(x) : undefined;
  });
}

/** The normal form without terms, in canonical order (printExpression). */
export function normalFormTerse(graph: SnomedGraph, id: number): string {
  return printExpression(normalForm(graph, id));
}

function compareSctid(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

function valueKey(a: ExprAttribute): string {
  const v = a.value;
  return v.kind === 'concept' ? v.concept.sctid.padStart(18, '0') : v.kind === 'number' ? v.text : v.kind === 'string' ? v.value : '';
}
