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
  /** The SQL condition "the caller may see this row" for a table, parameters from `$first`. */
  predicate(table: ScopedTable, first: number): SqlPredicate;
}
