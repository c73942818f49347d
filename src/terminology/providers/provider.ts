import type { ValueSetComposeInclude } from '@medplum/fhirtypes';
import type { CodeSystemInfo, Concept, Designation, StoredProperty, TermContext } from '../types.js';
import { splitCanonical } from '../versions.js';

/**
 * The one contract every terminology operation reads a code system through
 * (docs/terminology.md#code-system-providers): one provider per code-system version, chosen in
 * one place (select.ts). The rules of the operations (engine/) are written once against it;
 * a new kind of code system (a grammar, a relationship graph, a registry) is a new provider,
 * not a new branch in lookup, validate-code, expand or subsumes.
 *
 * Concepts are addressed by a number the provider chooses (`Concept.id`), meaningful only to
 * the provider that gave it; the engine passes it back, never makes one up.
 */
export interface CodeSystemProvider {
  readonly cs: CodeSystemInfo;
  /**
   * The concepts of `codes`, keyed by the given code. Exact matches win; in a case-insensitive
   * system a code also matches up to case (the caller compares `Concept.code` to tell).
   */
  findConcepts(codes: string[]): Promise<Map<string, Concept>>;
  /** Concepts by id, ascending (unknown ids left out). */
  conceptsByIds(ids: number[]): Promise<Concept[]>;
  /**
   * Designations besides the display, by concept id, including those of the request's
   * supplements of this system (marked with their `source`).
   */
  designations(ids: number[]): Promise<Map<number, Designation[]>>;
  /** The stored properties of a concept (and those its requested supplements add). */
  properties(id: number): Promise<StoredProperty[]>;
  /** Direct parents (`up`) or children of a concept, ascending ids. */
  neighbours(id: number, up: boolean): Promise<Concept[]>;
  /** True when `ancestor` is a proper ancestor of `descendant` (subsumption). */
  isAncestor(ancestor: number, descendant: number): Promise<boolean>;
  /**
   * Which of `ids` a selection admits. Throws the 400 of a filter the provider cannot evaluate
   * (unknown property, unsupported operator, bad value).
   */
  selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>>;
  /**
   * Every concept a selection admits, ascending ids, within `within` when given (an expansion).
   * A provider whose selection cannot be listed (an infinite grammar) throws a 4xx saying so.
   */
  enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]>;
  /**
   * Why a code is not a code of the system, when the provider can say more than "unknown" (a
   * grammar's parse error): `$validate-code` adds it as an informational issue.
   */
  unknownReason?(code: string): Promise<string | undefined>;
  /**
   * True when the display is itself one of the concept's designations (SNOMED CT's preferred
   * term is a description): `$lookup` does not list it a second time.
   */
  readonly listsDisplay?: boolean;
  /**
   * True when expansions stay flat: a polyhierarchy (SNOMED CT) would repeat a concept under
   * each of its parents, so its concepts are not nested under their ancestors.
   */
  readonly flatExpansions?: boolean;
  /**
   * True when the code system has a grammar (SNOMED CT's postcoordinated expressions): it has
   * members beyond those it lists, so its expansions are marked `valueset-unclosed`.
   */
  readonly grammar?: boolean;
  /**
   * A grammar's common codes: the canonical of a value set listing them. An include of the whole
   * system or by a filter expands to those of them it selects, marked not closed; a grammar
   * without one refuses such an include (docs/terminology.md#expanding-a-grammar).
   */
  readonly commonCodes?: string;
  /**
   * Why a selection's filters leave out a concept of the system, when the provider can say (a
   * UCUM `canonical` filter): `$validate-code` puts it before the not-in-value-set text of
   * `message`.
   */
  refusal?(selection: ConceptSelection, concept: Concept): Promise<string | undefined>;
  /**
   * True when `$lookup` gives the codes a concept's hierarchy and code-valued properties name
   * without their display (LOINC: a term names dozens of parts and lists).
   */
  readonly bareRelations?: boolean;
  /** Properties `$lookup` returns only when the request names them (`property`). */
  readonly onRequestProperties?: ReadonlySet<string>;
}

/** What one `compose.include` (or `exclude`) asks of a code system. */
export interface ConceptSelection {
  /** Its concept list and filters (ANDed); neither = the whole system. */
  include: ValueSetComposeInclude;
  /** FHIRPath of the include, for the error of a broken filter. */
  path: string;
  /** Only active concepts. */
  activeOnly: boolean;
  /** An expansion's text `filter`: every word starts a word of the display or a designation. */
  text?: string;
}

/** The requested supplements that apply to `cs` (for designations, properties and `used-supplement`). */
export function supplementsOf(tc: TermContext, cs: CodeSystemInfo): CodeSystemInfo[] {
  return tc.supplements.filter((s) => splitCanonical(s.supplements ?? '').url === cs.url);
}

/** A supplement's canonical as designations cite it (`url|version`). */
export function supplementCanonical(s: CodeSystemInfo): string {
  return s.version ? `${s.url}|${s.version}` : s.url;
}
