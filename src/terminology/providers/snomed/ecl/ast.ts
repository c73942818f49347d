/**
 * The syntax tree of an ECL 2.x expression constraint (docs/terminology.md#snomed-ct-expression-constraints-ecl).
 *
 * One node per construct of the grammar. Concept ids stay SCTID strings here (they exceed
 * 2^53); the evaluator resolves them through the graph. `|terms|` and comments are not kept:
 * they do not change the meaning of an expression. Every node carries `pos`, the 0-based offset
 * of its first character in the source text.
 */

/** The hierarchy operators (`<`, `<<`, `<!`, `<<!`, `>`, `>>`, `>!`, `>>!`, `!!>`, `!!<`). */
export type HierarchyOperator =
  | 'descendantOf' // <
  | 'descendantOrSelfOf' // <<
  | 'childOf' // <!
  | 'childOrSelfOf' // <<!
  | 'ancestorOf' // >
  | 'ancestorOrSelfOf' // >>
  | 'parentOf' // >!
  | 'parentOrSelfOf' // >>!
  | 'top' // !!>
  | 'bottom'; // !!<

/** `=`, `!=` and, for numbers and times, `<`, `<=`, `>`, `>=`. */
export type ComparisonOperator = '=' | '!=' | '<' | '<=' | '>' | '>=';

/** Any expression constraint. */
export type Expression =
  | ConceptReference
  | Wildcard
  | AlternateIdentifier
  | Hierarchy
  | MemberOf
  | Compound
  | Exclusion
  | Refined
  | Dotted
  | Filtered
  | History;

/** `404684003 |Clinical finding|`: the concept itself. */
export interface ConceptReference {
  readonly type: 'concept';
  readonly pos: number;
  readonly sctid: string;
  /** The `|term|` as written (not used by evaluation). */
  readonly term?: string;
}

/** `*`: every concept. */
export interface Wildcard {
  readonly type: 'any';
  readonly pos: number;
}

/** `LOINC#54486-6` or `"scheme#code"`: a concept named by an alternate identifier. */
export interface AlternateIdentifier {
  readonly type: 'alternateIdentifier';
  readonly pos: number;
  readonly scheme: string;
  readonly code: string;
  readonly term?: string;
}

/** `< X`, `>> X`, `!!> X`…: the operator applied to the concepts of its operand. */
export interface Hierarchy {
  readonly type: 'hierarchy';
  readonly pos: number;
  readonly operator: HierarchyOperator;
  readonly operand: Expression;
}

/**
 * `^ X`: the referenced components of the members of the refsets X stands for. With a field
 * selection (`^ [targetComponentId] X`, `^ [*] X`) the values of those fields instead. Member
 * filters (`{{ M … }}`) keep the members that satisfy every filter of every block.
 */
export interface MemberOf {
  readonly type: 'memberOf';
  readonly pos: number;
  readonly refsets: Expression;
  /** Field names, `'*'` for all fields; absent means `referencedComponentId`. */
  readonly fields?: readonly string[] | '*';
  /** One entry per `{{ M … }}` block; within a block every filter must hold. */
  readonly memberFilters: readonly (readonly MemberFilter[])[];
}

/** `A AND B AND C` (also `,`) or `A OR B OR C`: at least two operands. */
export interface Compound {
  readonly type: 'and' | 'or';
  readonly pos: number;
  readonly operands: readonly Expression[];
}

/** `A MINUS B`. */
export interface Exclusion {
  readonly type: 'minus';
  readonly pos: number;
  readonly left: Expression;
  readonly right: Expression;
}

/** `focus : refinement`. */
export interface Refined {
  readonly type: 'refined';
  readonly pos: number;
  readonly focus: Expression;
  readonly refinement: Refinement;
}

/** `focus . attribute`: the values of the attributes named by `attribute` on the focus concepts. */
export interface Dotted {
  readonly type: 'dotted';
  readonly pos: number;
  readonly focus: Expression;
  readonly attribute: Expression;
}

/** `focus {{ D … }}` or `focus {{ C … }}`: the focus concepts that pass the filter block. */
export interface Filtered {
  readonly type: 'filtered';
  readonly pos: number;
  readonly focus: Expression;
  readonly filter: DescriptionFilterBlock | ConceptFilterBlock;
}

/** `focus {{ + HISTORY… }}`: the focus plus the inactive concepts associated with its members. */
export interface History {
  readonly type: 'history';
  readonly pos: number;
  readonly focus: Expression;
  /** `-MIN`, `-MOD`, `-MAX`; absent with a subset or for plain `HISTORY` (which means MAX). */
  readonly profile?: 'min' | 'mod' | 'max';
  /** `HISTORY (refsets)`: the association refsets to follow. */
  readonly subset?: Expression;
}

// ---- refinements ----------------------------------------------------------------------------

/** A refinement: attributes, groups, and their conjunction/disjunction. */
export type Refinement = RefinementAnd | RefinementOr | AttributeGroup | Attribute;

export interface RefinementAnd {
  readonly type: 'refinementAnd';
  readonly pos: number;
  readonly operands: readonly Refinement[];
}

export interface RefinementOr {
  readonly type: 'refinementOr';
  readonly pos: number;
  readonly operands: readonly Refinement[];
}

/** `[n..m] { attributes }`: the attributes must hold within one role group. */
export interface AttributeGroup {
  readonly type: 'group';
  readonly pos: number;
  readonly cardinality?: Cardinality;
  /** Only attributes and their and/or inside a group (groups do not nest). */
  readonly attributes: Refinement;
}

/** `[n..m] R name op value`. */
export interface Attribute {
  readonly type: 'attribute';
  readonly pos: number;
  readonly cardinality?: Cardinality;
  readonly reverse: boolean;
  /** The attribute types (an expression constraint: `363698007`, `<< 47429007`, `*`). */
  readonly name: Expression;
  readonly value: AttributeValue;
}

/** `[min..max]`; `max` undefined for `*`. */
export interface Cardinality {
  readonly min: number;
  readonly max?: number;
}

export type AttributeValue =
  | { readonly kind: 'expression'; readonly operator: '=' | '!='; readonly value: Expression }
  | { readonly kind: 'number'; readonly operator: ComparisonOperator; readonly value: number; readonly text: string }
  | { readonly kind: 'string'; readonly operator: '=' | '!='; readonly value: readonly SearchTerm[] }
  | { readonly kind: 'boolean'; readonly operator: '=' | '!='; readonly value: boolean };

// ---- filters --------------------------------------------------------------------------------

/**
 * A search term: `"heart att"` / `match:"heart att"` (every word a prefix of a word of the
 * term, in any order) or `wild:"card*pathy"` (the whole term against a pattern, `*` any run of
 * characters). `text` is the source between the quotes, escapes kept (for printing).
 */
export type SearchTerm =
  | {
      readonly mode: 'match';
      /** `match:` was written (a bare `"…"` is a match too; concrete values compare it whole). */
      readonly keyword: boolean;
      readonly text: string;
      /** The unescaped words. */
      readonly words: readonly string[];
    }
  | {
      readonly mode: 'wild';
      readonly text: string;
      /** The unescaped literal pieces between the wildcards (`*` → `['', '']`). */
      readonly segments: readonly string[];
    };

/** `{{ D … }}`: a description of the concept must pass every filter. */
export interface DescriptionFilterBlock {
  readonly kind: 'description';
  readonly filters: readonly DescriptionFilter[];
}

/** `{{ C … }}`: the concept must pass every filter. */
export interface ConceptFilterBlock {
  readonly kind: 'concept';
  readonly filters: readonly ConceptFilter[];
}

/** A concept reference set `(a b c)` or an expression, as a filter operand. */
export type ConceptSetOperand = { readonly kind: 'set'; readonly concepts: readonly ConceptReference[] } | { readonly kind: 'expression'; readonly value: Expression };

export type DescriptionFilter =
  | { readonly type: 'term'; readonly pos: number; readonly operator: '=' | '!='; readonly terms: readonly SearchTerm[] }
  | { readonly type: 'language'; readonly pos: number; readonly operator: '=' | '!='; readonly codes: readonly string[] }
  | { readonly type: 'typeId'; readonly pos: number; readonly operator: '=' | '!='; readonly value: ConceptSetOperand }
  | { readonly type: 'typeToken'; readonly pos: number; readonly operator: '=' | '!='; readonly tokens: readonly ('syn' | 'fsn' | 'def')[] }
  | {
      readonly type: 'dialect';
      readonly pos: number;
      readonly operator: '=' | '!=';
      /** Dialects by alias (`en-gb`) or by refset (an expression or a set); each with its own acceptabilities. */
      readonly dialects: readonly DialectEntry[];
      /** The expression form (`dialectId = << X`). */
      readonly expression?: Expression;
      /** The acceptability set written after the whole filter. */
      readonly acceptability?: Acceptability;
    }
  | ModuleFilter
  | EffectiveTimeFilter
  | ActiveFilter
  | { readonly type: 'id'; readonly pos: number; readonly operator: '=' | '!='; readonly ids: readonly string[] };

export interface DialectEntry {
  readonly alias?: string;
  readonly concept?: ConceptReference;
  readonly acceptability?: Acceptability;
}

/** `(prefer accept)` or concept references to acceptability concepts. */
export type Acceptability = { readonly kind: 'tokens'; readonly tokens: readonly ('accept' | 'prefer')[] } | { readonly kind: 'concepts'; readonly concepts: readonly ConceptReference[] };

export interface ModuleFilter {
  readonly type: 'module';
  readonly pos: number;
  readonly operator: '=' | '!=';
  readonly value: ConceptSetOperand;
}

/** Times are `yyyymmdd` numbers; an empty `""` time is 0 (no effective time). */
export interface EffectiveTimeFilter {
  readonly type: 'effectiveTime';
  readonly pos: number;
  readonly operator: ComparisonOperator;
  readonly times: readonly number[];
}

export interface ActiveFilter {
  readonly type: 'active';
  readonly pos: number;
  readonly operator: '=' | '!=';
  readonly value: boolean;
}

export type ConceptFilter =
  | { readonly type: 'definitionStatusId'; readonly pos: number; readonly operator: '=' | '!='; readonly value: ConceptSetOperand }
  | { readonly type: 'definitionStatusToken'; readonly pos: number; readonly operator: '=' | '!='; readonly tokens: readonly ('primitive' | 'defined')[] }
  | ModuleFilter
  | EffectiveTimeFilter
  | ActiveFilter;

export type MemberFilter =
  | ModuleFilter
  | EffectiveTimeFilter
  | ActiveFilter
  | { readonly type: 'field'; readonly pos: number; readonly field: string; readonly operator: ComparisonOperator; readonly value: MemberFieldValue };

export type MemberFieldValue =
  | { readonly kind: 'expression'; readonly value: Expression }
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'string'; readonly value: readonly SearchTerm[] }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'time'; readonly value: readonly number[] };
