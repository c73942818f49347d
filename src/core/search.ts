import type { ResourceRepository } from './repository.js';

/**
 * What search supports, as the search index states it (docs/rest.md#search): the
 * CapabilityStatement is built from it, so it lists exactly what a search accepts.
 */
export interface SearchParameterCapability {
  /** The parameter's code, e.g. `birthdate`, `_id`. */
  name: string;
  /** Its R4 type: string, token, reference, date, number, quantity, uri, composite, special. */
  type: string;
  /** The SearchParameter canonical, when it has one. */
  definition?: string;
  /** Modifiers it accepts (without the colon); `:<Type>` of a reference is listed as `type`. */
  modifiers: string[];
  /** For `type`: the target types a reference may be narrowed to. */
  targets?: string[];
  /** A composite's component types, in order (its value is their values joined by `$`). */
  components?: string[];
}

export interface SearchCapabilities {
  /** The parameters a search of `resourceType` accepts. */
  parameters(resourceType: string): SearchParameterCapability[];
  /** `_include` values a search of `resourceType` accepts (`Type:param`). */
  includes(resourceType: string): string[];
  /** `_revinclude` values a search of `resourceType` accepts (`Source:param`). */
  revIncludes(resourceType: string): string[];
  /** Compartments a search may be restricted to (CompartmentDefinition canonicals). */
  compartments(): string[];
}

/**
 * What search asks of the terminology engine for the token modifiers `:below`, `:above`, `:in`
 * and `:not-in` (docs/rest.md#terminology-modifiers). The terminology feature implements it
 * (src/app.ts wires it into the search index); search gives it the distinct codes actually
 * stored for the parameter, never a whole hierarchy. Code systems and value sets are resolved
 * as `repo`'s caller sees them (tenancy).
 */
export interface SearchTerminology {
  /**
   * Which of `candidates` (codes of `system`) are `code` itself or below it (`below`: `code`
   * subsumes them) / above it (`above`: they subsume `code`). Undefined when the caller knows no
   * such code system.
   */
  related(repo: ResourceRepository, system: string, code: string, relation: 'below' | 'above', candidates: string[]): Promise<Set<string> | undefined>;
  /**
   * Which of `candidates` are members of the value set `valueSet` (a canonical `url[|version]`,
   * or `ValueSet/<id>`),
   * as `system|code` keys. Undefined when the caller knows no such value set.
   */
  members(repo: ResourceRepository, valueSet: string, candidates: Array<{ system: string; code: string }>): Promise<Set<string> | undefined>;
}
