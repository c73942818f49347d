import type { AuthInfo } from '../core/auth.js';
import type { AccessGrant, Interaction, Scope, ScopedRow, ScopedTable, SqlPredicate } from '../core/scope.js';
import { forbidden, notFound } from '../fhir/outcome.js';
import { accessLayersOf } from './access-rights.js';

/**
 * THE tenancy rule (docs/auth.md#roles), written once: every query that filters by project —
 * resources, history, search, the terminology index, invite look-ups — asks this module,
 * either per row (`canSee`) or as an SQL condition for its own table (`predicate`, `ownedBy`);
 * so do the administrative checks (`checkAdminister`, the import's owner and overwrite rules).
 *
 * - The system and super admins see and write everything.
 * - Everyone else sees their own project's rows plus shared content (no project).
 * - Account resources are written only by super admins; plain members (people and client
 *   applications) see only their own account resources, project admins their project's.
 * - Shared content is read-only for non-super-admins (403); another project's rows do not
 *   exist for the caller (404).
 * - Access policies are written by admins only (a plain member must not widen or narrow others).
 * - Within that, the token's SMART scopes and the membership's access policy (or a Patient
 *   profile's own compartment) narrow what the caller may do (docs/auth.md#scopes,
 *   docs/auth.md#access-policies): a type or interaction they exclude → 403; rows outside their
 *   compartment or criteria do not exist for the caller (their SQL: search/query/access.ts).
 *   Terminology and definition resources stay readable by all (PUBLIC_TYPES).
 */

/** Account resources: only super admins (and the system) write them through the repository. */
export const ACCOUNT_TYPES: readonly string[] = ['Project', 'User', 'ProjectMembership', 'ClientApplication'];

/** Account resources a plain member sees only for itself; project admins see their project's. */
export const PERSONAL_ACCOUNT_TYPES: readonly string[] = ['User', 'ProjectMembership', 'ClientApplication'];

/** Written only by admins of their project (and super admins): they decide what others may do. */
export const ADMIN_WRITTEN_TYPES: readonly string[] = ['AccessPolicy'];

/**
 * Types every authenticated caller reads and searches whatever its scopes and access policy
 * (docs/auth.md#access-policies): terminology and the server's definitions, which carry no
 * patient data and which terminology calls and clients need (Medplum keeps such "public"
 * types too). Writing them follows the caller's rights.
 */
export const PUBLIC_TYPES: readonly string[] = [
  'CodeSystem',
  'ValueSet',
  'ConceptMap',
  'NamingSystem',
  'OperationDefinition',
  'StructureDefinition',
  'SearchParameter',
  'CompartmentDefinition',
  'CapabilityStatement',
  'TerminologyCapabilities',
];

/** The `resource` and `resource_history` tables (and search queries) under an alias. */
export function resourceTable(alias: string): ScopedTable {
  return { alias, project: 'project_id', type: 'resource_type', id: 'id' };
}

/** The tenancy rule for one caller. */
export function scopeFor(auth: AuthInfo): Scope {
  // A frozen caller (a verified token's, src/auth) cannot change: its scope — the parsed SMART
  // scopes and policy grants — is built once, not per request.
  if (!Object.isFrozen(auth)) return new CallerScope(auth);
  let scope = frozenScopes.get(auth);
  if (!scope) frozenScopes.set(auth, (scope = new CallerScope(auth)));
  return scope;
}

const frozenScopes = new WeakMap<AuthInfo, Scope>();

class CallerScope implements Scope {
  /** The access layers (access-rights.ts); empty = the membership's full rights. */
  private readonly layers: AccessGrant[][];

  constructor(readonly auth: AuthInfo) {
    this.layers = accessLayersOf(auth);
  }

  checkAccess(resourceType: string, interaction: Interaction): void {
    if (this.layers.length === 0 || this.exempt(resourceType, interaction)) return;
    const allowed = this.layers.every((layer) =>
      layer.some((g) => (g.resourceType === '*' || g.resourceType === resourceType) && g.interactions.has(interaction)),
    );
    if (!allowed) throw forbidden();
  }

  accessLayers(interaction: Interaction): AccessGrant[][] | undefined {
    if (this.layers.length === 0) return undefined;
    return this.layers.map((layer) => layer.filter((g) => g.interactions.has(interaction)));
  }

  /** Public types are read and searched by everyone (PUBLIC_TYPES). */
  private exempt(resourceType: string, interaction: Interaction): boolean {
    return (interaction === 'r' || interaction === 's') && PUBLIC_TYPES.includes(resourceType);
  }

  canSee(row: ScopedRow): boolean {
    const { auth } = this;
    if (auth.superAdmin) return true;
    if (row.projectId !== null && row.projectId !== undefined && row.projectId !== auth.projectId) return false;
    if (auth.projectAdmin || row.resourceType === undefined || !PERSONAL_ACCOUNT_TYPES.includes(row.resourceType)) return true;
    return row.id !== undefined && this.ownAccountIds().includes(row.id);
  }

  checkWrite(row: ScopedRow): void {
    if (this.auth.superAdmin) return;
    if (!this.canSee(row)) throw notFound();
    if (row.projectId === null || row.projectId === undefined) throw forbidden();
    if (row.resourceType !== undefined && ACCOUNT_TYPES.includes(row.resourceType)) throw forbidden();
    if (row.resourceType !== undefined && ADMIN_WRITTEN_TYPES.includes(row.resourceType) && !this.auth.projectAdmin) throw forbidden();
  }

  checkDelete(row: ScopedRow): void {
    // A project admin removes members of its own project (docs/auth.md#managing-members).
    if (row.resourceType === 'ProjectMembership' && typeof row.projectId === 'string' && this.administers(row.projectId)) return;
    this.checkWrite(row);
  }

  checkCreate(resourceType: string): void {
    if (this.auth.superAdmin) return;
    if (ACCOUNT_TYPES.includes(resourceType)) throw forbidden();
    if (ADMIN_WRITTEN_TYPES.includes(resourceType) && !this.auth.projectAdmin) throw forbidden();
  }

  checkAdminister(projectId?: string): void {
    if (!this.administers(projectId)) throw forbidden();
  }

  /** A super admin, or an admin of `projectId` (without one: of its own project). */
  private administers(projectId: string | undefined): boolean {
    const { auth } = this;
    // A token whose scopes do not grant everything administers nothing (docs/auth.md#scopes).
    if (this.layers.length > 0 && !this.fullScopes()) return false;
    if (auth.superAdmin) return true;
    return auth.projectAdmin && (projectId === undefined || projectId === auth.projectId);
  }

  ownerOfImport(requestedProject: string | undefined): string | undefined {
    this.checkAdminister(requestedProject);
    return this.auth.superAdmin ? requestedProject : this.auth.projectId;
  }

  async checkImportOver(existing: () => Promise<ScopedRow | undefined>): Promise<void> {
    if (this.auth.superAdmin) return;
    const row = await existing();
    if (row && (row.projectId ?? undefined) !== this.auth.projectId) throw notFound();
  }

  ownerOfNew(resourceType: string, id: string | undefined, requestedProject: string | undefined): string | undefined {
    if (this.auth.superAdmin && requestedProject !== undefined) return requestedProject;
    if (this.auth.superAdmin && resourceType === 'Project') return id; // a project owns itself
    return this.auth.projectId;
  }

  predicate(table: ScopedTable, first: number): SqlPredicate {
    const { auth } = this;
    if (auth.superAdmin) return { sql: 'true', params: [] };
    const project = `${table.alias}.${table.project}`;
    const own = `(${project} = $${first} OR ${project} IS NULL)`;
    if (auth.projectAdmin || table.type === undefined || table.id === undefined) return { sql: own, params: [auth.projectId ?? null] };
    const [own1, own2] = this.ownAccountIds();
    const types = PERSONAL_ACCOUNT_TYPES.map((t) => `'${t}'`).join(', ');
    const type = `${table.alias}.${table.type}`;
    const id = `${table.alias}.${table.id}`;
    return {
      sql: `${own} AND (${type} NOT IN (${types}) OR ${id} IN ($${first + 1}, $${first + 2}))`,
      params: [auth.projectId ?? null, own1 ?? null, own2 ?? null],
    };
  }

  /** True when the token's scopes (if any) include every interaction on every type, unconditionally. */
  private fullScopes(): boolean {
    const scoped = this.auth.scopes?.some((s) => /^(patient|user|system)\//.test(s)) ?? false;
    const scopeLayer = scoped ? this.layers[0] : undefined;
    if (!scopeLayer) return true;
    return scopeLayer.some((g) => g.resourceType === '*' && g.interactions.size === 5 && !g.compartment && !g.criteria);
  }

  /** Ids of the caller's own account resources (its User or ClientApplication, its membership). */
  private ownAccountIds(): string[] {
    const { auth } = this;
    return [auth.userId ?? auth.clientId, auth.membershipId].filter((id): id is string => id !== undefined);
  }
}

/**
 * The condition "this row belongs to `projectId`" exactly (no shared content), from `$first`;
 * with `projectId` undefined, "this row is shared content" (no parameter).
 */
export function ownedBy(table: ScopedTable, projectId: string | undefined, first: number): SqlPredicate {
  const column = `${table.alias}.${table.project}`;
  return projectId === undefined ? { sql: `${column} IS NULL`, params: [] } : { sql: `${column} = $${first}`, params: [projectId] };
}
