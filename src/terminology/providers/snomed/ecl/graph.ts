/**
 * What the ECL evaluator reads a SNOMED CT edition through
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl).
 *
 * Designed for an in-memory index with dense internal ids: every concept of the edition (active
 * or not) has a small non-negative integer id, and every SCTID the edition uses as a relationship
 * type, module, definition status, description type, refset or acceptability has one too (RF2
 * releases carry those metadata concepts). SCTIDs stay strings (they exceed 2^53). Lists of ids
 * are sorted ascending without duplicates unless said otherwise; they may be typed arrays and the
 * evaluator never writes to them. Nothing here knows RF2 files or storage.
 */

/** |Is a| (116680003): the hierarchy, never listed among the attributes. */
export const IS_A = '116680003';

/** Well-known metadata SCTIDs the evaluator compares against. */
export const SCT = {
  primitive: '900000000000074008',
  defined: '900000000000073002',
  fsn: '900000000000003001',
  synonym: '900000000000013009',
  definition: '900000000000550004',
  preferred: '900000000000548007',
  acceptable: '900000000000549004',
} as const;

/** A sorted id list (ascending, no duplicates). */
export type IdList = ArrayLike<number>;

/** One description (or text definition) of a concept. */
export interface EclDescription {
  /** The description's own SCTID (for `{{ D id = … }}`). */
  readonly sctid: string;
  readonly active: boolean;
  readonly term: string;
  /** The two-letter language code (`en`, `sv`). */
  readonly languageCode: string;
  /** The id of its type (FSN, synonym, definition). */
  readonly typeId: number;
  readonly moduleId: number;
  /** `yyyymmdd` as a number; 0 when unknown. */
  readonly effectiveTime: number;
  /**
   * Its acceptability in each language refset that lists it, flattened as pairs
   * `[refsetId, acceptabilityId, refsetId, acceptabilityId, …]` (active members only).
   */
  readonly acceptability: ArrayLike<number>;
}

/** A concrete value: `group`, `typeId` and a number, string or boolean. */
export interface EclConcreteValue {
  readonly group: number;
  readonly typeId: number;
  readonly value: number | string | boolean;
}

/** One refset member, for member filters and field selection (`{{ M … }}`, `^ [field] X`). */
export interface EclRefsetMember {
  /** The referenced component's SCTID (a concept, or a description for language refsets). */
  readonly referencedComponentId: string;
  readonly active: boolean;
  readonly moduleId: number;
  readonly effectiveTime: number;
  /** The refset's own columns by their RF2 header name (`mapTarget`, `targetComponentId`, …); component ids as SCTID strings. */
  readonly fields: Readonly<Record<string, string | number | boolean>>;
}

export interface EclGraph {
  /** The id of an SCTID, or undefined when the edition does not know it. */
  resolve(sctid: string): number | undefined;
  /** The SCTID of an id. */
  sctid(id: number): string;
  /** Every concept id (active and inactive), sorted. Ids of metadata SCTIDs without a concept row are not in it. */
  allConcepts(): IdList;
  /**
   * What `*` stands for: the concepts of the edition's hierarchy — the root concept, its
   * descendants, and the inactive concepts (which have left the hierarchy but are still the
   * edition's). An active concept with no is-a path to the root (a module concept of a subset whose
   * metadata hierarchy was left out) is not. Without it, `allConcepts()`.
   */
  hierarchyConcepts?(): IdList;
  /** Whether the concept is active. */
  isActive(id: number): boolean;
  /** The id of the concept's definition status (primitive 900000000000074008 or defined 900000000000073002). */
  definitionStatus(id: number): number;
  moduleId(id: number): number;
  /** `yyyymmdd` as a number; 0 when unknown. */
  effectiveTime(id: number): number;

  /** Direct supertypes by active inferred |is a|, sorted. */
  parents(id: number): IdList;
  /** Direct subtypes, sorted. */
  children(id: number): IdList;
  /** All supertypes (transitive, without the concept itself), sorted. */
  ancestors(id: number): IdList;
  /** All subtypes (transitive, without the concept itself), sorted. */
  descendants(id: number): IdList;

  /**
   * The concept's active inferred attribute relationships other than |is a|, flattened as
   * triples `[group, typeId, destinationId, …]` (group 0 = ungrouped); any order.
   */
  attributes(id: number): ArrayLike<number>;
  /**
   * The reverse: relationships pointing at the concept, as triples `[group, typeId, sourceId, …]`
   * (the group is the source's group); any order.
   */
  incoming(id: number): ArrayLike<number>;
  /** Active concrete values of the concept. */
  concreteValues(id: number): readonly EclConcreteValue[];

  /** Whether the id is a refset (the edition has member rows for it; for `^`). */
  isRefset(id: number): boolean;
  /** Every refset id, sorted (for `^ *`). */
  refsets(): IdList;
  /** The concepts referenced by active members of the refset, sorted (empty when it is not a refset). */
  refsetMembers(refsetId: number): IdList;
  /** All members with their fields (active and inactive); only needed for member filters and field selection. */
  refsetMemberRows?(refsetId: number): Iterable<EclRefsetMember>;

  /** The concept's descriptions and text definitions (active and inactive). */
  descriptions(id: number): readonly EclDescription[];

  /**
   * Historical associations pointing at the concept, as pairs `[associationRefsetId, sourceId, …]`
   * (the inactive concepts that were replaced by, or are the same as, …, this concept); for
   * history supplements. Absent: history supplements add nothing.
   */
  historicalSources?(id: number): ArrayLike<number>;

  /** The language refset SCTID of a dialect alias (`en-nz`), beyond the few the evaluator knows. */
  dialectAlias?(alias: string): string | undefined;

  /** An alternate identifier (`LOINC#54486-6`) to an id; absent or undefined when unknown. */
  resolveAlternate?(scheme: string, code: string): number | undefined;
}
