import type { ValueSetComposeInclude, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import type { CodeSystemInfo, Concept, Designation, StoredProperty, TermContext } from '../../types.js';
import { msg } from '../../messages.js';
import { filterOp, invalidValueSet, textFilterMatcher } from '../filters.js';
import type { CodeSystemProvider, ConceptSelection } from '../provider.js';
import { terminologyCache } from '../fhir/index-cache.js';
import { terminologyLimits } from '../../limits.js';
import { IndexProvider } from '../fhir/index-provider.js';
import { readGraphSnapshot, snomedGraph, type SnomedGraph } from './sct-index.js';
import { evaluateEclFilter, SortedIds } from './sct-ecl.js';
import { normalFormTerse, normalFormText } from './sct-normal-form.js';
import { DESCRIPTION_MARKER, DIALECT_TAGS, editionNameOf, SCTID } from './sct-meta.js';
import { checkExpression, expressionProblemText, isPostcoordinated, parseExpression } from './expression/expression.js';
import {
  findExpression,
  isVirtualId,
  virtualAsConcept,
  virtualById,
  virtualHasAncestor,
  virtualProperties,
  virtualSelected,
  withoutExpressionsFilter,
} from './sct-expressions.js';

/**
 * The SNOMED CT provider (docs/terminology.md#snomed-ct): one edition, answered from its
 * in-memory index and graph (sct-index.ts). Point reads, the hierarchy and the generic filters
 * are the code-system index's (IndexProvider); what is SNOMED CT's own is added here:
 * attributes and concrete values as properties, `concept in <refset>` (refset membership),
 * `constraint` / `expression` (ECL). Every question waits for the edition's index (an edition
 * has no SQL read path: relationship groups and refsets live only in the index).
 */

/** Properties `$lookup` answers only when asked for by name (docs/terminology.md#snomed-ct). */
const ON_REQUEST = new Set(['moduleId', 'sufficientlyDefined', 'normalForm', 'normalFormTerse']);

/** The ids SNOMED CT's own filters select: an ECL result as it is, or a set. */
type IdSet = SortedIds | Set<number>;

export class SnomedProvider implements CodeSystemProvider {
  readonly listsDisplay = true;
  readonly flatExpansions = true;
  readonly grammar = true;
  readonly filterMembersWithoutStatus = true;
  readonly onRequestProperties: ReadonlySet<string> = ON_REQUEST;
  /** `$lookup` names an edition by its canonical, `url|version`. */
  readonly lookupName: string;
  private loaded: Promise<{ base: IndexProvider; graph: SnomedGraph }> | undefined;

  constructor(
    private readonly tc: TermContext,
    readonly cs: CodeSystemInfo,
  ) {
    this.lookupName = cs.version ? `${cs.url}|${cs.version}` : cs.url;
  }

  /** Messages name the edition after its version: `… version '<version URI>' (International Edition)`. */
  versionLabel(): string | undefined {
    return editionNameOf(this.cs.title);
  }

  /** Why an expression is not a code of the edition: its first problem (a concept unknown, inactive, or no attribute). */
  async unknownReason(code: string): Promise<string | undefined> {
    if (!isPostcoordinated(code)) return undefined;
    const { graph } = await this.edition();
    let problems;
    try {
      problems = checkExpression(graph, parseExpression(code));
    } catch {
      return undefined;
    }
    return problems.length > 0 ? `Not a valid expression: ${expressionProblemText(problems[0])}` : undefined;
  }

  /** A valid expression was checked against the concepts, not against the concept model. */
  async validNote(code: string): Promise<string | undefined> {
    if (!isPostcoordinated(code)) return undefined;
    const { graph } = await this.edition();
    if (!findExpression(this.tc, this.cs.key, graph, code)) return undefined;
    return 'The expression is grammatically correct and the concepts are valid, but the expression has not been checked against the SNOMED CT concept model (MRCM)';
  }

  /**
   * An include can admit expressions no expansion lists unless it lists its concepts (the
   * expressions it lists are listed) or says `expressions = false`.
   */
  unclosedInclude(include: ValueSetComposeInclude): boolean {
    if (include.concept && include.concept.length > 0) return false;
    return !(include.filter ?? []).some((f) => f.property === 'expressions' && String(f.value).trim() === 'false');
  }

  /** The edition's index and graph (built on first use, then cached with the index). */
  edition(): Promise<{ base: IndexProvider; graph: SnomedGraph }> {
    this.loaded ??= (async () => {
      const cache = terminologyCache(this.tc.db);
      // Neither in memory yet: the graph's snapshot is read while the index is.
      const early = cache.peek(this.cs.key)?.memo.has('snomed') ? undefined : readGraphSnapshot(this.tc.db, this.cs);
      const index = await cache.index(this.cs);
      const graph = await snomedGraph(this.tc.db, this.cs, index, this.tc.log, early);
      return { base: new IndexProvider(this.tc, this.cs, index), graph };
    })();
    return this.loaded;
  }

  /** Concepts by SCTID; a postcoordinated expression whose concepts the edition has is a virtual concept (sct-expressions.ts). */
  async findConcepts(codes: string[]): Promise<Map<string, Concept>> {
    const { base, graph } = await this.edition();
    const found = await base.findConcepts(codes);
    for (const code of codes) {
      if (found.has(code)) continue;
      const v = findExpression(this.tc, this.cs.key, graph, code);
      if (v) found.set(code, virtualAsConcept(v));
    }
    return found;
  }

  async conceptsByIds(ids: number[]): Promise<Concept[]> {
    const real = await (await this.edition()).base.conceptsByIds(ids.filter((id) => !isVirtualId(id)));
    const virtual = [...new Set(ids.filter(isVirtualId))].sort((a, b) => a - b).flatMap((id) => {
      const v = virtualById(this.tc, this.cs.key, id);
      return v ? [virtualAsConcept(v)] : [];
    });
    return [...real, ...virtual];
  }

  /**
   * The descriptions, with what the loader recorded about each (docs/terminology.md#answers):
   * an inactive one is a former display (`retired`), a synonym preferred in no dialect is for
   * `$lookup` only (`secondary`), a synonym preferred in one dialect only carries that
   * dialect's tag (`en-GB`) as its language. In order: FSN, preferred synonyms, other
   * synonyms, definitions, inactive ones. An expression's one designation is its display.
   */
  async designations(ids: number[]): Promise<Map<number, Designation[]>> {
    const out = await (await this.edition()).base.designations(ids.filter((id) => !isVirtualId(id)));
    for (const [id, list] of out) out.set(id, list.map(sctDesignation).sort((a, b) => designationRank(a) - designationRank(b)));
    for (const id of ids.filter(isVirtualId)) {
      const v = virtualById(this.tc, this.cs.key, id);
      if (v) out.set(id, [{ language: DIALECT_TAGS[SCTID.usEnglish], use: PREFERRED_FOR_LANGUAGE, value: v.display }]);
    }
    return out;
  }

  /** effectiveTime, moduleId, sufficientlyDefined, then each attribute (by its type SCTID) and concrete value. */
  async properties(id: number): Promise<StoredProperty[]> {
    const { base, graph } = await this.edition();
    if (isVirtualId(id)) {
      // An expression has its focus concept's effective time and module, and its own attributes.
      const v = virtualById(this.tc, this.cs.key, id);
      if (!v) return [];
      const focus = v.concept.parents.length === 1 ? await this.properties(v.concept.parents[0]) : [];
      return [...focus.filter((p) => p.code === 'effectiveTime' || p.code === 'moduleId'), ...virtualProperties(graph, v)];
    }
    const list = await base.properties(id);
    if (!graph.isConcept(id)) return list;
    const e = String(graph.effectiveTime(id));
    if (e.length === 8) list.push({ code: 'effectiveTime', type: 'dateTime', value: `${e.slice(0, 4)}-${e.slice(4, 6)}-${e.slice(6, 8)}`, system: undefined, display: undefined });
    if (graph.moduleId(id) > 0) list.push({ code: 'moduleId', type: 'code', value: graph.sctid(graph.moduleId(id)), system: undefined, display: undefined });
    list.push({ code: 'sufficientlyDefined', type: 'boolean', value: String(graph.sctid(graph.definitionStatus(id)) === SCTID.defined), system: undefined, display: undefined });
    // Computed only when read (they are returned only when asked for).
    list.push(
      { code: 'normalForm', type: 'string', get value() { return normalFormText(graph, id); }, system: undefined, display: undefined },
      { code: 'normalFormTerse', type: 'string', get value() { return normalFormTerse(graph, id); }, system: undefined, display: undefined },
    );
    const attributes = graph.attributes(id);
    for (let i = 0; i < attributes.length; i += 3) {
      list.push({ code: graph.sctid(attributes[i + 1]), type: 'code', value: graph.sctid(attributes[i + 2]), system: undefined, display: undefined });
    }
    for (const c of graph.concreteValues(id)) {
      const type = typeof c.value === 'number' ? (Number.isInteger(c.value) ? 'integer' : 'decimal') : typeof c.value === 'boolean' ? 'boolean' : 'string';
      list.push({ code: graph.sctid(c.typeId), type, value: String(c.value), system: undefined, display: undefined });
    }
    return list;
  }

  /**
   * An expression is placed in the hierarchy by its focus concepts (it is not classified):
   * `$lookup` reports their parents and children.
   */
  async neighbours(id: number, up: boolean): Promise<Concept[]> {
    const { base } = await this.edition();
    if (!isVirtualId(id)) return base.neighbours(id, up);
    const v = virtualById(this.tc, this.cs.key, id);
    if (!v) return [];
    const byId = new Map<number, Concept>();
    for (const focus of v.concept.parents) for (const c of await base.neighbours(focus, up)) byId.set(c.id, c);
    return [...byId.values()].sort((a, b) => a.id - b.id);
  }

  async isAncestor(ancestor: number, descendant: number): Promise<boolean> {
    const { base, graph } = await this.edition();
    if (isVirtualId(ancestor)) return false;
    if (!isVirtualId(descendant)) return base.isAncestor(ancestor, descendant);
    const v = virtualById(this.tc, this.cs.key, descendant);
    return v !== undefined && virtualHasAncestor(graph, v, ancestor);
  }

  async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    const { base, graph } = await this.edition();
    const out = new Set<number>();
    for (const id of ids.filter(isVirtualId)) {
      const v = virtualById(this.tc, this.cs.key, id);
      if (v && (await virtualSelected(graph, v, selection))) out.add(id);
    }
    const real = ids.filter((id) => !isVirtualId(id));
    if (real.length === 0) return out;
    const { rest, within } = await this.split(graph, withoutExpressionsFilter(selection));
    const candidates = within ? real.filter((id) => within.has(id)) : real;
    for (const id of await base.selected(rest, candidates)) out.add(id);
    return out;
  }

  /** The concepts a selection admits, then the valid expressions its concept list names (in list order). */
  async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    const { base, graph } = await this.edition();
    // The text filter is matched here: against the display and the active descriptions only.
    const split = await this.split(graph, withoutExpressionsFilter({ ...selection, text: undefined }));
    const real = within?.filter((id) => !isVirtualId(id));
    let ids: number[];
    if (!split.within) ids = await base.enumerate(split.rest, real);
    else {
      const set = split.within;
      ids = await base.enumerate(split.rest, real ? real.filter((id) => set.has(id)) : [...set]);
    }
    if (selection.text) {
      const matches = textFilterMatcher(selection.text);
      const index = graph.index;
      await index.whenLoaded('designations');
      ids = ids.filter((id) => matches(index.code(id), [index.display(id) ?? '', ...index.designations(id).filter((d) => !sctDesignation(d).retired).map((d) => d.value)]));
    }
    const listed = (selection.include.concept ?? []).map((c) => c.code).filter((code) => isPostcoordinated(code));
    if (listed.length === 0 || !this.unclosedInclude({ ...selection.include, concept: undefined })) return ids;
    const virtual = new Set<number>();
    for (const code of listed) {
      const v = findExpression(this.tc, this.cs.key, graph, code);
      if (v && (!within || within.includes(v.id)) && (!selection.text || v.display.toLowerCase().includes(selection.text.toLowerCase()))) virtual.add(v.id);
    }
    return [...ids, ...[...virtual].sort((a, b) => a - b)];
  }

  /**
   * Separates the filters SNOMED CT answers itself (refset membership, ECL) from those the
   * code-system index answers; the former become one set of ids (their intersection).
   */
  private async split(graph: SnomedGraph, selection: ConceptSelection): Promise<{ rest: ConceptSelection; within: IdSet | undefined }> {
    const filters = selection.include.filter ?? [];
    const rest: ValueSetComposeIncludeFilter[] = [];
    let within: IdSet | undefined;
    for (const [j, f] of filters.entries()) {
      const ids = await this.sctFilter(graph, f, `${selection.path}.filter[${j}]`);
      if (!ids) {
        rest.push(f);
        continue;
      }
      const before = within;
      // One filter's ids are used as they are (an ECL result is not copied); several are intersected.
      within = before ? new Set([...ids].filter((id) => before.has(id))) : ids instanceof SortedIds ? ids : new Set(ids);
    }
    return { rest: { ...selection, include: { ...selection.include, filter: rest.length > 0 ? rest : undefined } }, within };
  }

  /** The ids a SNOMED CT filter selects, or undefined for a filter the index answers. */
  private async sctFilter(graph: SnomedGraph, f: ValueSetComposeIncludeFilter, path: string): Promise<Iterable<number> | undefined> {
    const op = filterOp(f) ?? '';
    const property = f.property ?? '';
    const value = typeof f.value === 'string' ? f.value.trim() : '';
    if ((property === 'constraint' || property === 'expression') && op === '=') {
      if (value === '') throw invalidValueSet(msg.filterNoValue(this.cs.url, property, op), path, 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE');
      return evaluateEclFilter(graph, value, path, terminologyLimits(this.tc.env).maxEclSteps);
    }
    if (property === 'refset' && op === 'exists') {
      // The reference sets themselves (`?fhir_vs=refset`): concepts with active members.
      return value === 'true' ? Array.from(graph.refsets()) : Array.from(graph.allConcepts()).filter((id) => !graph.isRefset(id));
    }
    if (property === 'concept' && op === 'in') {
      // SNOMED CT's `in`: members of the reference set(s) named (docs/terminology.md#snomed-ct).
      const out = new Set<number>();
      for (const code of value.split(',').map((v) => v.trim()).filter(Boolean)) {
        const refset = graph.resolve(code);
        if (refset !== undefined) for (const id of Array.from(graph.refsetMembers(refset))) out.add(id);
      }
      return out;
    }
    return undefined;
  }
}

/** The display listed as a designation (as `$lookup` lists a display that is no description). */
const PREFERRED_FOR_LANGUAGE = { system: 'http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra', code: 'preferredForLanguage', display: 'Preferred For Language' };

/** A stored description made a designation: its loader's marker read and taken off (sct-meta.ts). */
function sctDesignation(d: Designation): Designation {
  const marker = d.extension?.find((e) => e.url === DESCRIPTION_MARKER);
  if (!marker) return d;
  const out: Designation = { language: d.language, use: d.use, value: d.value };
  const others = (d.extension ?? []).filter((e) => e !== marker);
  if (others.length > 0) out.extension = others;
  const tokens = typeof marker.valueString === 'string' ? marker.valueString.split(' ') : [];
  if (tokens.includes('inactive')) {
    out.retired = 'inactive';
    return out;
  }
  const preferred = tokens.filter((t) => t.startsWith('p')).map((t) => t.slice(1));
  if (preferred.length === 0 && tokens.some((t) => t.startsWith('a'))) out.secondary = true;
  // The preferred term of one dialect only is that dialect's (en-GB, en-US).
  if (d.use?.code === SCTID.synonym && preferred.length === 1 && DIALECT_TAGS[preferred[0]] && d.language === 'en') out.language = DIALECT_TAGS[preferred[0]];
  return out;
}

function designationRank(d: Designation): number {
  if (d.retired) return 4;
  if (d.use?.code === SCTID.fsn) return 0;
  if (d.use?.code === SCTID.definition) return 3;
  return d.secondary ? 2 : 1;
}
