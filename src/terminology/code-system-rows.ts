import type { CodeSystem, CodeSystemConcept, CodeSystemConceptProperty, CodeSystemProperty } from '@medplum/fhirtypes';
import type { BulkColumn } from './bulk-insert.js';
import type { Concept } from './types.js';

/**
 * Turns a CodeSystem resource into the rows of the terminology index (pure, no database):
 * concepts numbered 1..n in document order, typed properties, designations and the parent
 * edges of the hierarchy, taken from nested `concept`s and from `parent`/`child` properties
 * (either declared direction is enough).
 */

export const CONCEPT_PROPERTIES = 'http://hl7.org/fhir/concept-properties';

const SD = 'http://hl7.org/fhir/StructureDefinition';
/** The standards-status extension: on a concept, its status (`deprecated`, `withdrawn`, …). */
export const STANDARDS_STATUS = `${SD}/structuredefinition-standards-status`;

/**
 * Standard concept extensions kept as concept properties (docs/terminology.md#concept-extensions):
 * order, label and weight under the concept-properties codes, the rendering extensions under
 * their own url (an expansion repeats them as extensions).
 */
export const EXTENSION_PROPERTIES: Record<string, { code: string; type: string }> = {
  [`${SD}/codesystem-conceptOrder`]: { code: 'order', type: 'decimal' },
  [`${SD}/valueset-conceptOrder`]: { code: 'order', type: 'decimal' },
  [`${SD}/codesystem-label`]: { code: 'label', type: 'string' },
  [`${SD}/valueset-label`]: { code: 'label', type: 'string' },
  [`${SD}/itemWeight`]: { code: 'weight', type: 'decimal' },
  [`${SD}/rendering-style`]: { code: `${SD}/rendering-style`, type: 'string' },
  [`${SD}/rendering-xhtml`]: { code: `${SD}/rendering-xhtml`, type: 'string' },
};

/** The concept-properties URI of a property an extension became (`weight` is `itemWeight`). */
export const EXTENSION_PROPERTY_URIS: Record<string, string> = {
  order: `${CONCEPT_PROPERTIES}#order`,
  label: `${CONCEPT_PROPERTIES}#label`,
  weight: `${CONCEPT_PROPERTIES}#itemWeight`,
};

/** True for a property row made from an extension (not one the code system declares). */
export function isExtensionProperty(code: string, defs: CodeSystemProperty[]): boolean {
  return (code in EXTENSION_PROPERTY_URIS || code.startsWith(`${SD}/rendering-`)) && !defs.some((d) => d.code === code);
}

/** Property rows for a concept's standard extensions (see EXTENSION_PROPERTIES). */
export function extensionRows(concept: number, extensions: Array<{ url?: string; [k: string]: unknown }> | undefined): PropertyRow[] {
  const out: PropertyRow[] = [];
  for (const e of extensions ?? []) {
    const target = e.url ? EXTENSION_PROPERTIES[e.url] : undefined;
    if (!target) continue;
    const value = e.valueInteger ?? e.valueDecimal ?? e.valueString ?? e.valueCode ?? e.valueMarkdown;
    if (typeof value !== 'string' && typeof value !== 'number') continue;
    out.push({ concept, code: target.code, type: target.type, value: String(value), system: undefined, display: undefined });
  }
  return out;
}

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
}

/** Columns of `tx_concept_property` (besides `cs_key`), shared by indexing and `$import`. */
export const PROPERTY_COLUMNS: BulkColumn<PropertyRow>[] = [
  { name: 'concept', type: 'int', value: (r) => r.concept },
  { name: 'code', type: 'text', value: (r) => r.code },
  { name: 'type', type: 'text', value: (r) => r.type },
  { name: 'value', type: 'text', value: (r) => r.value },
  { name: 'system', type: 'text', value: (r) => r.system },
  { name: 'display', type: 'text', value: (r) => r.display },
];

/** Columns of `tx_designation` (besides `cs_key`), shared by indexing and `$import`. */
export const DESIGNATION_COLUMNS: BulkColumn<DesignationRow>[] = [
  { name: 'concept', type: 'int', value: (r) => r.concept },
  { name: 'language', type: 'text', value: (r) => r.language },
  { name: 'use_system', type: 'text', value: (r) => r.useSystem },
  { name: 'use_code', type: 'text', value: (r) => r.useCode },
  { name: 'use_display', type: 'text', value: (r) => r.useDisplay },
  { name: 'value', type: 'text', value: (r) => r.value },
];

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
  const ids = new Map<string, number>();
  const concepts: ConceptRow[] = [];
  const properties: PropertyRow[] = [];
  const designations: DesignationRow[] = [];
  const edgeKeys = new Set<string>();
  const edges: Array<[number, number]> = [];
  const related: Array<{ id: number; target: string; direction: 'parent' | 'child' }> = [];
  const kind = propertyKinds(cs.property);

  const addEdge = (child: number, parent: number) => {
    if (child === parent) return;
    const key = `${child}:${parent}`;
    if (edgeKeys.has(key)) return;
    edgeKeys.add(key);
    edges.push([child, parent]);
  };

  // Iterative depth-first walk (deep hierarchies must not overflow the stack).
  const stack: Array<{ concept: CodeSystemConcept; parent: number | undefined }> = [];
  const pushAll = (list: CodeSystemConcept[] | undefined, parent: number | undefined) => {
    for (let i = (list?.length ?? 0) - 1; i >= 0; i--) stack.push({ concept: (list as CodeSystemConcept[])[i], parent });
  };
  pushAll(cs.concept, undefined);
  while (stack.length > 0) {
    const { concept, parent } = stack.pop() as { concept: CodeSystemConcept; parent: number | undefined };
    if (typeof concept?.code !== 'string' || concept.code === '') continue;
    let id = ids.get(concept.code);
    if (id === undefined) {
      id = concepts.length + 1;
      ids.set(concept.code, id);
      concepts.push(conceptRow(concept, kind));
      for (const p of concept.property ?? []) {
        const k = kind(p.code);
        if (k === 'parent' || k === 'child') {
          const target = p.valueCode ?? p.valueCoding?.code ?? p.valueString;
          if (target) related.push({ id, target, direction: k });
          continue;
        }
        const row = propertyRow(id, p);
        if (row) properties.push(row);
      }
      properties.push(...extensionRows(id, concept.extension as Array<{ url?: string }> | undefined));
      for (const d of concept.designation ?? []) {
        if (typeof d.value !== 'string') continue;
        designations.push({
          concept: id,
          language: d.language,
          useSystem: d.use?.system,
          useCode: d.use?.code,
          useDisplay: d.use?.display,
          value: d.value,
        });
      }
    }
    if (parent !== undefined) addEdge(id, parent);
    pushAll(concept.concept, id);
  }
  for (const r of related) {
    const other = ids.get(r.target);
    if (other === undefined) continue;
    if (r.direction === 'parent') addEdge(r.id, other);
    else addEdge(other, r.id);
  }
  return { concepts, properties, designations, edges };
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
  return (code) => (code === undefined ? undefined : (byCode.get(code) ?? code));
}

export function conceptRow(concept: CodeSystemConcept, kind: (code: string | undefined) => string | undefined): ConceptRow {
  let inactive = false;
  let abstract = false;
  let status: string | undefined;
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
    }
  }
  // Without a status property, the standards-status extension gives the status.
  status ??= (concept.extension ?? []).find((e) => e.url === STANDARDS_STATUS)?.valueCode;
  // FHIR concept-properties: `retired` (and tx's `inactive`) status means the concept is not active.
  if (status === 'retired' || status === 'inactive') inactive = true;
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
