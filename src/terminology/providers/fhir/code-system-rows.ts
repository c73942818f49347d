import type { CodeSystem, CodeSystemConcept, CodeSystemConceptProperty, CodeSystemProperty } from '@medplum/fhirtypes';
import type { Concept } from '../../types.js';
import { CONCEPT_PROPERTIES, STANDARDS_STATUS, designationExtensions, extensionRows } from '../concept-extensions.js';

/**
 * Turns a CodeSystem resource into the rows of the terminology index (pure, no database):
 * concepts numbered 1..n in document order, typed properties, designations and the parent
 * edges of the hierarchy, taken from nested `concept`s and from `parent`/`child` properties
 * (either declared direction is enough).
 */

/** A concept as indexed: the stored `Concept` before it has its row id. */
export type ConceptRow = Omit<Concept, 'id'>;

export interface PropertyRow {
  concept: number;
  code: string;
  type: string;
  value: string;
  system: string | undefined;
  display: string | undefined;
}

export interface DesignationRow {
  concept: number;
  language: string | undefined;
  useSystem: string | undefined;
  useCode: string | undefined;
  useDisplay: string | undefined;
  value: string;
  /** JSON of the designation's standard extensions (designationExtensions), undefined when none. */
  extension?: string;
}

export interface CodeSystemRows {
  /** concepts[i] has id i + 1. */
  concepts: ConceptRow[];
  properties: PropertyRow[];
  designations: DesignationRow[];
  /** Parent edges as [child id, parent id] pairs (deduplicated). */
  edges: Array<[number, number]>;
}

/** Property value types an index row can hold, in the order value[x] keys are probed. */
const VALUE_TYPES = ['Code', 'Coding', 'String', 'Integer', 'Boolean', 'DateTime', 'Decimal'] as const;

/** Builds the index rows of a code system; duplicate codes are merged (a second occurrence adds a parent). */
export function codeSystemRows(cs: CodeSystem): CodeSystemRows {
  const builder = new CodeSystemRowBuilder(cs.property, supplementDisplayLanguage(cs));
  builder.add(cs.concept);
  const { concepts, properties, designations } = builder.take();
  return { concepts, properties, designations, edges: builder.edges() };
}

/**
 * The language of a supplement's concept displays: a supplement that states its `language` is a
 * language pack, whose displays are designations in that language of the concepts it supplements
 * (docs/terminology.md#displays-and-languages). Undefined for a code system.
 */
export function supplementDisplayLanguage(cs: Pick<CodeSystem, 'content' | 'language'>): string | undefined {
  return cs.content === 'supplement' ? cs.language : undefined;
}

/** Rows taken from a builder: concepts[i] has id firstId + i. */
export interface RowBatch {
  firstId: number;
  concepts: ConceptRow[];
  properties: PropertyRow[];
  designations: DesignationRow[];
}

/**
 * Turns concepts into index rows incrementally, so a code system can be indexed while it is
 * still being read (docs/terminology.md#cli-import): `add` concepts in document order (nested
 * ones included), `take` the rows produced so far (and write them), and at the end `edges`
 * resolves the `parent`/`child` properties, which may name codes that came later. What it keeps
 * between batches is the code → id map and the edges.
 */
export class CodeSystemRowBuilder {
  private readonly ids = new Map<string, number>();
  private readonly kind: (code: string | undefined) => string | undefined;
  private pending: RowBatch = { firstId: 1, concepts: [], properties: [], designations: [] };
  private count = 0;
  private readonly edgeKeys = new Set<number | string>();
  private readonly edgeList: Array<[number, number]> = [];
  private related: Array<{ id: number; target: string; direction: 'parent' | 'child' }> = [];

  constructor(
    defs: CodeSystemProperty[] | undefined,
    /** A language pack's language: each concept's display is also a designation in it (supplementDisplayLanguage). */
    private readonly displayLanguage?: string,
  ) {
    this.kind = propertyKinds(defs);
  }

  /** Number of concepts so far (the last id given). */
  get size(): number {
    return this.count;
  }

  /** Rows of the concepts added since the last `take`. */
  get pendingRows(): number {
    return this.pending.concepts.length + this.pending.properties.length + this.pending.designations.length;
  }

  /** Adds concepts (and their nested concepts) in document order. */
  add(list: CodeSystemConcept[] | undefined): void {
    // Iterative depth-first walk (deep hierarchies must not overflow the stack).
    const stack: Array<{ concept: CodeSystemConcept; parent: number | undefined }> = [];
    const pushAll = (items: CodeSystemConcept[] | undefined, parent: number | undefined) => {
      for (let i = (items?.length ?? 0) - 1; i >= 0; i--) stack.push({ concept: (items as CodeSystemConcept[])[i], parent });
    };
    pushAll(list, undefined);
    const { kind } = this;
    while (stack.length > 0) {
      const { concept, parent } = stack.pop() as { concept: CodeSystemConcept; parent: number | undefined };
      if (typeof concept?.code !== 'string' || concept.code === '') continue;
      let id = this.ids.get(concept.code);
      if (id === undefined) {
        id = ++this.count;
        this.ids.set(concept.code, id);
        this.pending.concepts.push(conceptRow(concept, kind));
        for (const p of concept.property ?? []) {
          const k = kind(p.code);
          if (k === 'parent' || k === 'child') {
            const target = p.valueCode ?? p.valueCoding?.code ?? p.valueString;
            if (target) this.related.push({ id, target, direction: k });
            continue;
          }
          const row = propertyRow(id, p);
          if (row) this.pending.properties.push(row);
        }
        this.pending.properties.push(...extensionRows(id, concept.extension as Array<{ url?: string }> | undefined));
        const { displayLanguage } = this;
        if (displayLanguage && typeof concept.display === 'string' && !(concept.designation ?? []).some((d) => d.value === concept.display && d.language === displayLanguage)) {
          this.pending.designations.push({ concept: id, language: displayLanguage, useSystem: undefined, useCode: undefined, useDisplay: undefined, value: concept.display });
        }
        for (const d of concept.designation ?? []) {
          if (typeof d.value !== 'string') continue;
          this.pending.designations.push({
            concept: id,
            language: d.language,
            useSystem: d.use?.system,
            useCode: d.use?.code,
            useDisplay: d.use?.display,
            value: d.value,
            extension: designationExtensions(d.extension),
          });
        }
      }
      if (parent !== undefined) this.addEdge(id, parent);
      pushAll(concept.concept, id);
    }
  }

  /** The rows produced since the last call. */
  take(): RowBatch {
    const batch = this.pending;
    this.pending = { firstId: this.count + 1, concepts: [], properties: [], designations: [] };
    return batch;
  }

  /** Every parent edge as [child id, parent id] (deduplicated); call after the last `add`. */
  edges(): Array<[number, number]> {
    for (const r of this.related) {
      const other = this.ids.get(r.target);
      if (other === undefined) continue;
      if (r.direction === 'parent') this.addEdge(r.id, other);
      else this.addEdge(other, r.id);
    }
    this.related = [];
    return this.edgeList;
  }

  private addEdge(child: number, parent: number): void {
    if (child === parent) return;
    // A number key while ids fit 21 bits (2M concepts), else a string.
    const key = child < 0x200000 && parent < 0x200000 ? child * 0x200000 + parent : `${child}:${parent}`;
    if (this.edgeKeys.has(key)) return;
    this.edgeKeys.add(key);
    this.edgeList.push([child, parent]);
  }
}

/**
 * Classifies property codes by meaning: the code system's own declaration (by URI) wins, else
 * the conventional code (`parent`, `child`, `inactive`, `status`, `notSelectable`).
 */
export function propertyKinds(defs: CodeSystemProperty[] | undefined): (code: string | undefined) => string | undefined {
  const byCode = new Map<string, string>();
  for (const p of defs ?? []) {
    if (p.code && p.uri?.startsWith(`${CONCEPT_PROPERTIES}#`)) byCode.set(p.code, p.uri.slice(CONCEPT_PROPERTIES.length + 1));
  }
  return (code) => {
    if (code === undefined) return undefined;
    const meaning = byCode.get(code) ?? code;
    return CONVENTIONAL_KINDS[meaning] ?? meaning;
  };
}

/**
 * Property codes with a conventional meaning besides the concept-properties codes themselves:
 * the HL7 terminology (THO) states a hierarchy with `subsumedBy` (the parent) and `subsumes`
 * (a child) properties (docs/terminology.md#hierarchy).
 */
const CONVENTIONAL_KINDS: Record<string, string> = { subsumedBy: 'parent', subsumes: 'child' };

/**
 * Whether a concept-properties date (`deprecationDate`, `retirementDate`, R4's `deprecated`) has
 * come, judged when the code system is indexed; a boolean `true` in such a property counts too.
 */
function dateReached(dateTime: string | undefined, flag: boolean | undefined): boolean {
  if (flag === true) return true;
  if (!dateTime) return false;
  const at = Date.parse(dateTime.length === 4 ? `${dateTime}-01-01` : dateTime);
  return !Number.isNaN(at) && at <= Date.now();
}

export function conceptRow(concept: CodeSystemConcept, kind: (code: string | undefined) => string | undefined): ConceptRow {
  let inactive = false;
  let abstract = false;
  let status: string | undefined;
  /** The status the concept-properties dates give: deprecated or retired since a date passed. */
  let dated: 'deprecated' | 'retired' | undefined;
  for (const p of concept.property ?? []) {
    switch (kind(p.code)) {
      case 'inactive':
        if (p.valueBoolean === true) inactive = true;
        break;
      case 'notSelectable':
        if (p.valueBoolean === true) abstract = true;
        break;
      case 'status':
        status = p.valueCode ?? p.valueString ?? status;
        break;
      case 'deprecated': // R4's name of the deprecation date
      case 'deprecationDate':
        if (dateReached(p.valueDateTime, p.valueBoolean)) dated = dated === 'retired' ? dated : 'deprecated';
        break;
      case 'retirementDate':
        if (dateReached(p.valueDateTime, p.valueBoolean)) dated = 'retired';
        break;
    }
  }
  // Without a status property, the standards-status extension gives the status, else the
  // concept-properties dates (docs/terminology.md#valueset-validate-code).
  const standards = (concept.extension ?? []).find((e) => e.url === STANDARDS_STATUS)?.valueCode;
  status ??= standards ?? dated;
  // FHIR concept-properties: `retired` (and tx's `inactive`) status means the concept is not
  // active; so does a `withdrawn` standards status (docs/terminology.md#valueset-validate-code).
  if (status === 'retired' || status === 'inactive' || standards === 'withdrawn') inactive = true;
  return { code: concept.code, display: concept.display, definition: concept.definition, inactive, abstract, status };
}

export function propertyRow(concept: number, p: CodeSystemConceptProperty): PropertyRow | undefined {
  if (!p.code) return undefined;
  for (const suffix of VALUE_TYPES) {
    const value = (p as unknown as Record<string, unknown>)[`value${suffix}`];
    if (value === undefined || value === null) continue;
    const type = suffix === 'Coding' ? 'Coding' : suffix.charAt(0).toLowerCase() + suffix.slice(1);
    if (suffix === 'Coding') {
      const coding = value as { system?: string; code?: string; display?: string };
      if (!coding.code) return undefined;
      return { concept, code: p.code, type, value: coding.code, system: coding.system, display: coding.display };
    }
    return { concept, code: p.code, type, value: scalarText(value), system: undefined, display: undefined };
  }
  return undefined;
}

/** A primitive property value as stored text (anything else is not a property value R4 allows). */
function scalarText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}
