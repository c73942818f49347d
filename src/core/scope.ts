import type { AuthInfo } from './auth.js';

/**
 * The tenancy contract: what one caller may see and write. Implemented once, in
 * `src/storage/scope.ts` (docs/auth.md#roles); every query that filters by project asks it.
 */

/** A row as tenancy sees it. */
export interface ScopedRow {
  /** Owning project; null/undefined = shared content (e.g. the base terminologies). */
  projectId: string | null | undefined;
  /** Resource type of the row, when the table holds resources of several types. */
  resourceType?: string;
  id?: string;
}

/**
 * The columns of a table (under an alias) that tenancy reads. `type` and `id` are given for
 * tables that can hold account resources (User, ProjectMembership, ClientApplication): plain
 * members see only their own of those.
 */
export interface ScopedTable {
  alias: string;
  project: string;
  type?: string;
  id?: string;
}

/** An SQL condition with its parameters, numbered from the `first` the caller asked for. */
export interface SqlPredicate {
  sql: string;
  params: unknown[];
}

/**
 * What a caller does with a resource type, as SMART App Launch 2 spells it (docs/auth.md#scopes):
 * `c` create, `r` read (read, vread, instance history, `_include`, chains), `u` update,
 * `d` delete, `s` search (type search, type and system history).
 */
export type Interaction = 'c' | 'r' | 'u' | 'd' | 's';

/**
 * One right of a caller: an interaction set on a resource type (or `*`), optionally only on
 * the rows of a Patient's compartment and/or the rows that match a search.
 */
export interface AccessGrant {
  /** A resource type, or `*` for every type. */
  resourceType: string;
  interactions: ReadonlySet<Interaction>;
  /** Rows must be in the compartment of this Patient (its id). */
  compartment?: string;
  /** Rows must match this search of `resourceType` (query pairs, e.g. [['category','laboratory']]). */
  criteria?: Array<[string, string]>;
}

export interface Scope {
  readonly auth: AuthInfo;
  /** May the caller see this row? */
  canSee(row: ScopedRow): boolean;
  /**
   * Throws unless the caller may change this existing, visible row: 403 for shared content
   * and account resources (super admins only), 404 for another project's row.
   */
  checkWrite(row: ScopedRow): void;
  /**
   * Throws unless the caller may delete this existing, visible row: `checkWrite`'s rule, except
   * that a project's admins remove its memberships (docs/auth.md#managing-members).
   */
  checkDelete(row: ScopedRow): void;
  /** Throws 403 unless the caller may create a resource of this type. */
  checkCreate(resourceType: string): void;
  /** The project a new resource belongs to (the caller's; super admins may name one). */
  ownerOfNew(resourceType: string, id: string | undefined, requestedProject: string | undefined): string | undefined;
  /**
   * Throws 403 unless the caller administers `projectId` (a super admin, or an admin of exactly
   * that project); without `projectId`: unless it is a super admin or an admin of its own project.
   */
  checkAdminister(projectId?: string): void;
  /**
   * The project an administrative import writes into (docs/terminology.md#import-into-a-running-server):
   * a project admin's own (naming another → 403), shared content (undefined) or the named
   * project for a super admin; 403 for anyone else.
   */
  ownerOfImport(requestedProject: string | undefined): string | undefined;
  /**
   * Throws 404 when an import would replace a stored resource (`existing`, read only when it
   * matters) that is not in the caller's own project — shared content included; super admins
   * replace any.
   */
  checkImportOver(existing: () => Promise<ScopedRow | undefined>): Promise<void>;
  /**
   * Throws 403 `Forbidden` unless the caller's scopes and access policy (docs/auth.md#scopes,
   * docs/auth.md#access-policies) allow `interaction` on some rows of `resourceType`.
   */
  checkAccess(resourceType: string, interaction: Interaction): void;
  /**
   * The row conditions of the caller's access rights for `interaction`: undefined when there are
   * none (every row tenancy shows); else layers, each a list of grants (already narrowed to
   * `interaction`): a row passes when, in every layer, one grant for its type accepts it. The
   * storage builds the SQL of it (search/query/access.ts), so a read, a search page and a
   * written row are judged by the same condition.
   */
  accessLayers(interaction: Interaction): AccessGrant[][] | undefined;
  /** The SQL condition "the caller may see this row" for a table, parameters from `$first`. */
  predicate(table: ScopedTable, first: number): SqlPredicate;
}
