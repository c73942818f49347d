import { randomUUID } from 'node:crypto';
import type { Resource } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { Database, Queryable } from '../core/database.js';
import type { BulkLoad, BulkLoadOptions, ExportPage, ExportPageQuery, HistoryEntry, ResourceRepository, SearchQuery, SearchResult, SystemRepository, UpdateResult } from '../core/repository.js';
import { BulkLoader } from './bulk-load.js';
import { CreateGroup, groupLimit } from './create-group.js';
import { canCopy, copyReady, copyReadyOf, type CopyReady } from './copy-load.js';
import type { Scope } from '../core/scope.js';
import { badRequest, forbidden, gone, notFound, preconditionFailed } from '../fhir/outcome.js';
import type { ResourceHooks } from './resource-hooks.js';
import type { FhirPathEvaluator } from '../fhir/fhirpath-evaluator.js';
import type { SearchIndex } from './search/search-index.js';
import type { IndexRows } from './search/index-rows.js';
import { announceChange, changeAnnouncement, changeAnnouncements, heard } from './change-feed.js';
import { RowCache } from './row-cache.js';
import { checkNotReferenced, checkReferencesExist } from './reference-integrity.js';
import { resourceTable, scopeFor } from './scope.js';
import { sameResourceContent } from './stable-stringify.js';
import { accessSql, rowIndependent, rowPasses } from './search/query/access.js';
import { checkHiddenSearch, fieldRulesOf, policyWrite, withoutHidden } from './policy-fields.js';
import { SqlParams } from './search/query/sql-params.js';
import { UcumBudget, withUcumBudget } from './search/ucum-budget.js';
import type { Interaction } from '../core/scope.js';

/**
 * 403 text of a write whose result the caller could not see: outside its compartment or its
 * scope's or policy's criteria (docs/auth.md#access-policies).
 */
export const OUTSIDE_ACCESS = 'Resource is outside the compartment or criteria of your access';

/** NOTIFY channel of resource writes (the PostgreSQL read cache of every node, row-cache.ts). */
export const ROWS_CHANNEL = 'lattice_rows';

/** A create held back by a transaction that batches its creates (`transaction(fn, { batchCreates })`). */
interface HeldCreate {
  resource: Resource;
  projectId: string | null;
  now: string;
  /** Its index rows, built with its own request's UCUM budget (`firstVersion`). */
  rows: IndexRows;
}

/** A plain create waiting in its database's group (create-group.ts). */
interface GroupedCreate extends HeldCreate {
  writer: Repository;
}

/** The group commit of each database's plain creates (create-group.ts). */
const createGroups = new WeakMap<Database, CreateGroup<GroupedCreate>>();

function createGroupOf(db: Database): CreateGroup<GroupedCreate> {
  let group = createGroups.get(db);
  if (!group) {
    group = new CreateGroup<GroupedCreate>(db, (q, items) => items[0].writer.heldWrite(q, items)(), groupLimit(db));
    createGroups.set(db, group);
  }
  return group;
}

/** Plain creates of `db` waiting for a statement in flight (tests: they are sent together). */
export function waitingCreates(db: Database): number {
  return createGroups.get(db)?.queued ?? 0;
}

interface HeldCreates {
  tx: Queryable;
  items: HeldCreate[];
  /** `Type/id` of every create held by this transaction so far (written or not): what its references may name. */
  keys: Set<string>;
  writer: Repository;
  /**
   * Whether each project checks references on write, as this transaction read it: asked once,
   * not once per entry (docs/rest.md#cost-of-a-request). Forgotten when the transaction writes a Project.
   */
  checksReferences: Map<string, boolean>;
  /** The batches sent and not yet answered, chained in order; the transaction's next statement waits for them. */
  writing?: Promise<void>;
}

/** The held-back creates of each open transaction that batches them. */
const heldCreates = new WeakMap<Queryable, HeldCreates>();

/**
 * Creates held back before a batch is sent on its own (docs/rest.md#cost-of-a-request): the
 * database writes one batch while the next one is validated and indexed (a large transaction
 * Bundle's work overlaps), and a Bundle of up to this many creates is still one statement.
 */
export const HELD_BATCH = 200;

/**
 * Sends the creates `batch` holds as one statement, after the batches sent before it, without
 * waiting for its answer (its SQL and index rows are built now). A failure is seen by the
 * next `flushCreates`, which the transaction's next statement and its end wait for.
 */
function sendHeld(batch: HeldCreates): void {
  if (batch.items.length === 0) return;
  const items = batch.items;
  batch.items = [];
  const write = batch.writer.heldWrite(batch.tx, items);
  const previous = batch.writing;
  const sent = previous ? previous.then(write) : write();
  sent.catch(() => undefined); // seen by flushCreates
  batch.writing = sent;
}

/** Writes the creates `tx` holds back, if any (one statement), and waits for every batch sent before. */
async function flushCreates(tx: Queryable): Promise<void> {
  const batch = heldCreates.get(tx);
  if (!batch) return;
  sendHeld(batch);
  const writing = batch.writing;
  if (!writing) return;
  await writing;
  if (batch.writing === writing) batch.writing = undefined;
}

/** A row of the `resource` table. */
export interface ResourceRow {
  resource_type: string;
  id: string;
  version_id: number;
  project_id: string | null;
  last_updated: string | Date;
  deleted: boolean;
  content: string;
}

/** Largest resource (JSON characters) the read cache keeps. */
const MAX_CACHED_CONTENT = 256 * 1024;

/** A FHIR id (R4 `id` datatype); no stored resource has any other. */
const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;
/** A version id as stored (a positive integer); the current version bounds it further. */
const VERSION_ID = /^[1-9]\d{0,9}$/;

/**
 * Project-scoped access to stored resources (the `ResourceRepository` contract): every method
 * applies the caller's scope (`scope.ts`); resources of another project behave as if they did
 * not exist. Each change (current row, history row, search index, hooks) is one transaction.
 */
export class Repository implements SystemRepository {
  readonly scope: Scope;
  /** The open transaction of a joined repository (`inTransaction`). */
  private tx?: Queryable;
  /** A request's repository (`since` given): what its writes may spend converting new UCUM units for the index. */
  private ucum?: UcumBudget;

  constructor(
    private readonly db: Database,
    readonly auth: AuthInfo,
    private readonly hooks: ResourceHooks,
    private readonly searchIndex: SearchIndex,
    /** Current rows in memory (row-cache.ts); writes always invalidate, reads use it unless `joined`. */
    private readonly cache?: RowCache<ResourceRow>,
    /** True for a repository joined to a caller's transaction (`inTransaction`). */
    private readonly joined = false,
    /** When the request arrived (performance.now()): see `Database.caughtUp`. */
    private readonly since?: number,
    /** Where access policies' write constraints are evaluated (policy-fields.ts). */
    private readonly fhirpath?: FhirPathEvaluator,
  ) {
    this.scope = scopeFor(auth);
    if (since !== undefined) this.ucum = new UcumBudget();
  }

  /**
   * The same repository, joined to an open transaction: its reads, writes and hooks run on
   * `tx`, so several changes (e.g. the User, profile and membership of one invite) commit or
   * roll back together.
   */
  inTransaction(tx: Queryable): ResourceRepository {
    const db = this.db;
    // Creates a transaction holds back (`transaction(fn, { batchCreates })`) are written before
    // any other statement of it: every read sees them.
    const q: Queryable = {
      query: async (sql, params) => {
        await flushCreates(tx);
        return tx.query(sql, params);
      },
      ...(tx.copyRows ? { copyRows: async (table: string, columns: string[], text: string) => {
        await flushCreates(tx);
        return (tx.copyRows as NonNullable<Queryable['copyRows']>)(table, columns, text);
      } } : {}),
      ...(tx.afterEnd ? { afterEnd: (fn: () => void) => (tx.afterEnd as NonNullable<Queryable['afterEnd']>)(fn) } : {}),
    };
    const bound: Database = {
      driver: db.driver,
      health: () => db.health(),
      query: (sql, params) => q.query(sql, params),
      transaction: (fn) => fn(q),
      readPass: (fn) => fn(q, true),
      listen: (channel, handler) => db.listen(channel, handler),
      caughtUp: (since) => db.caughtUp(since),
      close: async () => undefined,
    };
    const joined = new Repository(bound, this.auth, this.hooks, this.searchIndex, this.cache, true, this.since, this.fhirpath);
    joined.tx = tx;
    joined.ucum = this.ucum;
    return joined;
  }

  /**
   * A new resource's first version as a create will store it (meta's versionId, lastUpdated,
   * project), with its index rows: built now, with this request's UCUM budget, so what refuses
   * them is this create's error, not that of the batch or group it is written with.
   */
  private firstVersion(input: Resource): HeldCreate {
    const now = new Date().toISOString();
    const projectId = this.scope.ownerOfNew(input.resourceType, input.id, input.meta?.project);
    const meta = { ...(input.meta ?? {}), versionId: '1', lastUpdated: now } as Record<string, unknown>;
    if (projectId) meta.project = projectId;
    else delete meta.project;
    const resource = { ...input, meta } as Resource;
    return { resource, projectId: projectId ?? null, now, rows: withUcumBudget(this.ucum, () => this.searchIndex.extract(resource)) };
  }

  /** Holds back a create in a transaction that batches them: the stored resource as the write will store it. */
  private holdCreate(batch: HeldCreates, input: Resource): Resource {
    const item = this.firstVersion(input);
    batch.items.push(item);
    batch.keys.add(`${item.resource.resourceType}/${item.resource.id}`);
    if (batch.items.length >= HELD_BATCH) sendHeld(batch);
    return this.redact(item.resource);
  }

  /**
   * A plain create outside a transaction, written with the creates of other requests that wait
   * at the same time (group commit, create-group.ts); answered once its statement committed.
   */
  private async createInGroup(input: Resource): Promise<Resource> {
    const item = this.firstVersion(input);
    await createGroupOf(this.db).add({ ...item, writer: this });
    return this.redact(item.resource);
  }

  /**
   * The write of held-back creates (new ids) as ONE statement: resource and history rows, their
   * search-index rows and, on PostgreSQL, the change announcement of each (docs/rest.md#cost-of-a-request).
   * The statement is built now; the function returned sends it.
   */
  heldWrite(tx: Queryable, items: HeldCreate[]): () => Promise<void> {
    const resources = items.map((i) => i.resource);
    const params: unknown[] = [
      resources.map((r) => r.resourceType),
      resources.map((r) => r.id as string),
      resources.map((r) => JSON.stringify(r)),
      items.map((i) => i.projectId),
      items.map((i) => i.now),
    ];
    const rows = 'SELECT t, i, 1, p, l::timestamptz, false, c FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(t, i, c, p, l)';
    const columns = '(resource_type, id, version_id, project_id, last_updated, deleted, content)';
    const parts = [`w AS (INSERT INTO resource ${columns} ${rows})`, `h AS (INSERT INTO resource_history ${columns} ${rows})`];
    parts.push(...withUcumBudget(this.ucum, () => this.searchIndex.manyIndexCtes(resources, params, items.map((i) => i.rows))));
    const keys = resources.map((r) => `${r.resourceType}/${r.id}`);
    const cache = this.cache;
    for (const key of keys) cache?.invalidate(key);
    const announcement = cache?.shared ? changeAnnouncements(params, ROWS_CHANNEL, keys) : undefined;
    if (announcement) tx.afterEnd?.(() => keys.forEach((key) => cache?.invalidate(key)));
    const sql = `WITH ${parts.join(', ')} SELECT ${announcement ? announcement.sql : '1'}`;
    return async () => {
      await tx.query(sql, params);
      announcement?.emit();
      if (announcement) for (const key of keys) cache?.invalidate(key);
    };
  }

  /** Creates a resource with a new server-assigned id (a client-supplied id is replaced). */
  async create<T extends Resource>(resource: T, options: { id?: string } = {}): Promise<T> {
    const id = options.id ?? randomUUID();
    this.scope.checkCreate(resource.resourceType);
    this.scope.checkAccess(resource.resourceType, 'c');
    this.forgetProjectFlags(resource.resourceType);
    const candidate = (await this.policyWrite({ ...resource, id }, undefined)) as T;
    await this.hooks.ready(this.db, this.since);
    await this.runBeforeWrite(candidate, undefined);
    await this.checkReferences(candidate, this.scope.ownerOfNew(candidate.resourceType, candidate.id, candidate.meta?.project));
    // In a transaction that batches its creates, a create that needs nothing after its write (no
    // hook's afterWrite, no access check of the written row; beforeWrite hooks ran above, redact
    // applies to the answer) is held back and written with the others in one statement (before
    // the transaction's next statement or its commit). A Patient or a DiagnosticReport (the
    // attachment hook rewrites signed URLs before the write) is held like an Observation.
    const batch = this.joined && this.tx ? heldCreates.get(this.tx) : undefined;
    if (batch && this.writesAlone(candidate.resourceType, 'c')) {
      return this.holdCreate(batch, candidate) as T;
    }
    // Nothing to check or mirror after the write: its one statement is the whole change, shared
    // with the creates of other requests waiting at the same time (group commit).
    if (this.writesAlone(candidate.resourceType, 'c')) {
      // (Not from code that holds PGlite's turn: the group's statement may wait for that turn.)
      if (!this.joined && !this.db.holdsTurn?.()) return (await this.createInGroup(candidate)) as T;
      return (await this.writeVersion(this.db, candidate, 1, undefined, 'insert')) as T;
    }
    return this.db.transaction(async (tx) => {
      const stored = (await this.writeVersion(tx, candidate, 1, undefined, 'insert')) as Resource;
      await this.checkWritten(tx, stored, 'c');
      return stored as T;
    });
  }

  async insertNew(tx: Queryable, resources: Resource[], projectId: string | undefined, prepared?: { now: string; rows: ReadonlyMap<Resource, unknown> }): Promise<void> {
    const now = prepared?.now ?? new Date().toISOString();
    const types: string[] = [];
    const ids: string[] = [];
    const contents: string[] = [];
    const stored: Resource[] = [];
    const ready: Array<CopyReady | undefined> = [];
    const joined = this.inTransaction(tx) as Repository;
    await this.hooks.ready(this.db, this.since);
    for (const input of resources) {
      const meta = { ...(input.meta ?? {}), versionId: '1', lastUpdated: now, project: projectId } as Record<string, unknown>;
      if (!projectId) delete meta.project;
      const resource = { ...input, meta } as Resource;
      await this.runBeforeWrite(resource, undefined);
      if (!this.writesAlone(resource.resourceType, 'c')) {
        // Mirrored by a hook (or checked against access rights): written on its own, in `tx`.
        const written = (await joined.writeVersion(tx, resource, 1, undefined, 'insert')) as Resource;
        await joined.checkWritten(tx, written, 'c');
        continue;
      }
      types.push(resource.resourceType);
      ids.push(resource.id as string);
      // Stored JSON and rows made ahead from the input: the same as from `resource` (meta's
      // versionId, lastUpdated and project are indexed by no parameter) unless a hook could change it.
      const made = this.hooks.for(resource.resourceType).length === 0 ? (prepared?.rows.get(input) as CopyReady | undefined) : undefined;
      contents.push(made?.content ?? JSON.stringify(resource));
      stored.push(resource);
      ready.push(made);
      this.cache?.invalidate(`${resource.resourceType}/${resource.id}`);
    }
    if (stored.length === 0) return;
    if (canCopy(tx)) {
      // Both drivers' transactions: COPY (storage/copy-load.ts); a Queryable without it gets the statement below.
      const rows = stored.map((r, i) => ready[i] ?? copyReadyOf(r, contents[i], withUcumBudget(this.ucum, () => this.searchIndex.extract(r))));
      return copyReady(tx, rows, projectId, now);
    }
    const params: unknown[] = [types, ids, contents, projectId ?? null, now];
    const rows = 'SELECT t, i, 1, $4::text, $5::timestamptz, false, c FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, i, c)';
    const columns = '(resource_type, id, version_id, project_id, last_updated, deleted, content)';
    const parts = [`w AS (INSERT INTO resource ${columns} ${rows})`, `h AS (INSERT INTO resource_history ${columns} ${rows})`];
    parts.push(...withUcumBudget(this.ucum, () => this.searchIndex.manyIndexCtes(stored, params, [])));
    // New ids: no node holds them in its read cache, so there is no change to announce.
    await tx.query(`WITH ${parts.join(', ')} SELECT 1`, params);
  }

  bulkLoad(options: BulkLoadOptions = {}): BulkLoad {
    return new BulkLoader(this.db, this, options);
  }

  /** Reads the current version; 404 when absent or invisible, 410 when deleted. */
  async read<T extends Resource = Resource>(resourceType: string, id: string): Promise<T> {
    this.scope.checkAccess(resourceType, 'r');
    const row = await this.accessibleRow(resourceType, id, 'r');
    if (!row) throw notFound();
    if (row.deleted) throw gone();
    return this.toResource(row) as T;
  }

  /** Reads the current version or returns undefined (absent, invisible or deleted). */
  async tryRead<T extends Resource = Resource>(resourceType: string, id: string): Promise<T | undefined> {
    this.scope.checkAccess(resourceType, 'r');
    const row = await this.accessibleRow(resourceType, id, 'r');
    return row && !row.deleted ? (this.toResource(row) as T) : undefined;
  }

  /** Reads one version (vread). A deleted version answers 410. */
  async readVersion(resourceType: string, id: string, versionId: string): Promise<Resource> {
    this.scope.checkAccess(resourceType, 'r');
    const current = await this.accessibleRow(resourceType, id, 'r', true);
    if (!current || !VERSION_ID.test(versionId) || Number(versionId) > current.version_id) throw notFound();
    const res = await this.db.query<ResourceRow>(
      'SELECT * FROM resource_history WHERE resource_type = $1 AND id = $2 AND version_id = $3',
      [resourceType, id, Number(versionId)],
    );
    const row = res.rows[0];
    if (!row) throw notFound();
    if (row.deleted) throw gone();
    return this.toResource(row);
  }

  /**
   * Updates (or creates, with the client's id) a resource. `ifMatch` is the expected current
   * version id; content identical to the current version creates no new version.
   */
  async update(resource: Resource, options: { ifMatch?: string } = {}): Promise<UpdateResult> {
    const { resourceType, id } = resource;
    if (!id || !FHIR_ID.test(id)) throw badRequest('Invalid resource id', `${resourceType}.id`);
    this.scope.checkCreate(resourceType);
    this.scope.checkAccess(resourceType, 'u');
    this.forgetProjectFlags(resourceType);
    await this.hooks.ready(this.db, this.since);
    // Fresh: the no-op shortcut below must compare with the stored version, never with a
    // cached row another node may already have replaced (that update would be lost).
    const before = await this.visibleRow(this.db, resourceType, id, true);
    const current = before && !before.deleted ? (JSON.parse(before.content) as Resource) : undefined;
    const input = resource;
    resource = await this.policyWrite(input, current);
    await this.runBeforeWrite(resource, current);
    await this.checkReferences(resource, before && !before.deleted ? (before.project_id ?? undefined) : this.scope.ownerOfNew(resourceType, id, resource.meta?.project));
    // Identical to the version just read: nothing to write, so no transaction and no row lock (a
    // PUT of unchanged content, every start's re-publication of definitions). Linearizable: the
    // no-op takes effect at that read; a concurrent writer's version simply comes after it.
    if (current && before && options.ifMatch === undefined && sameResourceContent(current, resource)) {
      this.scope.checkWrite(scopedRow(before));
      if (!(await rowPasses(this.db, this.scope, resourceType, id, 'u'))) throw notFound();
      return { resource: this.redact(current), created: false };
    }
    // The version just read, replaced in one statement while it is still current (no row lock,
    // no transaction); when another write came first, nothing is written and the locked path
    // below decides (docs/rest.md#cost-of-a-request).
    if (current && before && this.writesAlone(resourceType, 'u') && (options.ifMatch === undefined || matchesVersion(options.ifMatch, before))) {
      this.scope.checkWrite(scopedRow(before));
      const stored = await this.writeVersion(this.db, resource, before.version_id + 1, current, { expected: before.version_id });
      if (stored) return { resource: stored, created: false };
    }
    return this.db.transaction(async (tx) => {
      let row = await this.lockRow(tx, resourceType, id);
      if (!row) {
        if (options.ifMatch !== undefined) throw preconditionFailed();
        this.scope.checkAccess(resourceType, 'c'); // create-on-PUT creates
        const inserted = await this.insertPlaceholder(tx, resource);
        if (inserted) {
          const created = (await this.writeVersion(tx, resource, 1, undefined, 'update')) as Resource;
          await this.checkWritten(tx, created, 'c');
          return { resource: created, created: true };
        }
        row = await this.lockRow(tx, resourceType, id); // another request created it meanwhile
        if (!row) throw notFound();
      }
      this.scope.checkWrite(scopedRow(row));
      // A row outside the caller's compartment or criteria does not exist for it (docs/auth.md#access-policies).
      if (!row.deleted && !(await rowPasses(tx, this.scope, resourceType, id, 'u'))) throw notFound();
      if (row.deleted) this.scope.checkAccess(resourceType, 'c'); // re-creates
      if (options.ifMatch !== undefined && !matchesVersion(options.ifMatch, row)) throw preconditionFailed();
      // Compared with the stored content, not the redacted one: hooks restore hidden fields.
      const previous = JSON.parse(row.content) as Resource;
      if (row.version_id !== before?.version_id || row.deleted !== before?.deleted) {
        // Another write came between: the policy's kept fields and constraints are judged on this version.
        resource = await this.policyWrite(input, row.deleted ? undefined : previous);
        await this.runBeforeWrite(resource, row.deleted ? undefined : previous);
      }
      if (!row.deleted && sameResourceContent(previous, resource)) return { resource: this.redact(previous), created: false };
      const stored = (await this.writeVersion(tx, resource, row.version_id + 1, row.deleted ? undefined : previous, 'update')) as Resource;
      await this.checkWritten(tx, stored, row.deleted ? 'c' : 'u');
      return { resource: stored, created: false };
    });
  }

  /**
   * Deletes a resource (docs/rest.md#delete): an id that never existed, or that the caller cannot
   * see (another project, outside its access), is 404; deleting a deleted resource again changes
   * nothing (returns false). `ifMatch` (the expected current version, or `*`) → 412 when stale,
   * a deleted resource having no current version to match.
   */
  async delete(resourceType: string, id: string, options: { ifMatch?: string } = {}): Promise<boolean> {
    this.scope.checkAccess(resourceType, 'd');
    this.forgetProjectFlags(resourceType);
    await this.hooks.ready(this.db, this.since);
    return this.db.transaction(async (tx) => {
      const row = await this.lockRow(tx, resourceType, id);
      if (!row || row.version_id <= 0 || !this.scope.canSee(scopedRow(row))) throw notFound();
      // A deleted row is absent for a caller whose right depends on the row (as for reads).
      if (row.deleted ? !rowIndependent(this.scope, resourceType, 'd') : !(await rowPasses(tx, this.scope, resourceType, id, 'd'))) throw notFound();
      if (options.ifMatch !== undefined && (row.deleted || !matchesVersion(options.ifMatch, row))) throw preconditionFailed();
      if (row.deleted) return false;
      this.scope.checkDelete(scopedRow(row));
      await checkNotReferenced(tx, resourceType, id, row.project_id);
      const previous = JSON.parse(row.content) as Resource;
      for (const hook of this.hooks.for(resourceType)) await hook.beforeDelete?.(previous, this.auth, tx);
      const version = row.version_id + 1;
      const now = new Date().toISOString();
      await this.changed(tx, `${resourceType}/${id}`);
      await tx.query(
        'UPDATE resource SET version_id = $3, last_updated = $4, deleted = true WHERE resource_type = $1 AND id = $2',
        [resourceType, id, version, now],
      );
      await tx.query(
        `INSERT INTO resource_history (resource_type, id, version_id, project_id, last_updated, deleted, content)
         VALUES ($1, $2, $3, $4, $5, true, $6)`,
        [resourceType, id, version, row.project_id, now, row.content],
      );
      await this.searchIndex.remove(tx, resourceType, id);
      for (const hook of this.hooks.for(resourceType)) await hook.afterDelete?.(tx, previous);
      return true;
    });
  }

  /** History of one resource (`id` given), of a type, or of the whole server (no type), newest first. */
  async history(
    resourceType: string | undefined,
    id: string | undefined,
    page: { count: number; offset: number; since?: string; shared?: boolean },
  ): Promise<{ entries: HistoryEntry[]; total: number }> {
    // Instance history is a read of the resource; type and system history search (docs/auth.md#scopes).
    const interaction: Interaction = id !== undefined ? 'r' : 's';
    if (id !== undefined) {
      if (resourceType === undefined) throw notFound();
      this.scope.checkAccess(resourceType, 'r');
      const row = await this.accessibleRow(resourceType, id, 'r');
      if (!row) throw notFound();
    } else if (resourceType !== undefined) {
      this.scope.checkAccess(resourceType, 's');
    }
    const p = new SqlParams(this.scope);
    p.add(resourceType ?? null);
    p.add(id ?? null);
    p.add(page.since ?? null);
    const vis = this.scope.predicate(resourceTable('h'), 4);
    p.values.push(...vis.params);
    const clauses = [
      resourceType !== undefined ? 'h.resource_type = $1' : '$1::text IS NULL',
      id !== undefined ? 'h.id = $2' : '$2::text IS NULL',
      page.since ? 'h.last_updated >= $3::timestamptz' : '$3::text IS NULL',
      vis.sql,
    ];
    if (id === undefined && page.shared !== true) clauses.push('h.project_id IS NOT NULL');
    // A version is shown when the resource's current index passes the access rights: history
    // follows what the caller may see of the resource now.
    const access = accessSql(p, this.scope, 'h', interaction, resourceType);
    if (access !== undefined) clauses.push(access);
    const where = clauses.join(' AND ');
    const params = p.values;
    const total = (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource_history h WHERE ${where}`, params)).rows[0]?.n ?? 0;
    const rows = (
      await this.db.query<ResourceRow>(
        `SELECT * FROM resource_history h WHERE ${where}
         ORDER BY h.last_updated DESC, h.version_id DESC LIMIT ${page.count} OFFSET ${page.offset}`,
        params,
      )
    ).rows;
    return {
      total,
      entries: rows.map((row) => ({
        resource: this.toResource(row),
        deleted: row.deleted,
        versionId: String(row.version_id),
        lastUpdated: isoOf(row.last_updated),
        method: row.deleted ? 'DELETE' : row.version_id === 1 ? 'POST' : 'PUT',
      })),
    };
  }

  /** Searches resources of one type within the caller's scope. */
  async search(query: SearchQuery): Promise<SearchResult> {
    if (query.resourceType !== '*') this.scope.checkAccess(query.resourceType, 's');
    const rules = fieldRulesOf(this.auth.accessPolicy, query.resourceType);
    if (rules) checkHiddenSearch(query.resourceType, query.params, rules);
    // A system search (`_type=A,B`): each type as if it were searched alone.
    for (const type of query.compartment ? [] : (query.types ?? [])) {
      this.scope.checkAccess(type, 's');
      const typeRules = fieldRulesOf(this.auth.accessPolicy, type);
      if (typeRules) checkHiddenSearch(type, query.params, typeRules);
    }
    // Outside a transaction a search asked again may be answered from memory (search-cache.ts);
    // not from code holding PGlite's turn, whose statements run inside the open transaction.
    const caughtUp = this.joined || this.db.holdsTurn?.() ? undefined : () => this.db.caughtUp(this.since);
    const result = await this.searchIndex.search(this.db, this.scope, query, this, caughtUp);
    return { ...result, resources: result.resources.map((r) => this.redact(r)) };
  }

  /** One transaction for several changes: `fn` gets this repository joined to it (or joins the open one). */
  /** One page of a bulk export (docs/export.md); a type whose hooks redact is parsed and redacted line by line. */
  async exportPage(query: ExportPageQuery): Promise<ExportPage> {
    this.scope.checkAccess(query.resourceType, 's');
    const page = await this.searchIndex.exportPage(this.db, this.scope, query, this);
    const redacts = this.hooks.for(query.resourceType).some((hook) => hook.redact !== undefined);
    const lines = page.rows.map((row) => (redacts ? JSON.stringify(this.redact(JSON.parse(row.content) as Resource)) : row.content));
    return { lines, last: page.last, done: page.done };
  }

  async transaction<T>(fn: (repo: ResourceRepository) => Promise<T>, options?: { timeoutMs?: number; batchCreates?: boolean }): Promise<T> {
    if (this.joined) return fn(this);
    if (!options?.batchCreates) return this.db.transaction((tx) => fn(this.inTransaction(tx)), options);
    return this.db.transaction(async (tx) => {
      const batch: HeldCreates = { tx, items: [], keys: new Set(), writer: this, checksReferences: new Map() };
      heldCreates.set(tx, batch);
      try {
        const result = await fn(this.inTransaction(tx));
        await flushCreates(tx); // before the commit
        return result;
      } catch (err) {
        // No batch may still be on its way when the transaction is rolled back (on PostgreSQL
        // it would reach the connection after the ROLLBACK, outside the transaction).
        await batch.writing?.catch(() => undefined);
        throw err;
      } finally {
        heldCreates.delete(tx);
      }
    }, options);
  }

  /**
   * Search under `pg_advisory_xact_lock` of the normalised search. The lock is taken before
   * the search statement, so under READ COMMITTED the search sees every change committed by
   * an earlier holder of the same lock (PGlite serializes transactions anyway).
   */
  async lockedSearch(query: SearchQuery): Promise<SearchResult> {
    if (!this.joined) throw new Error('lockedSearch needs a transaction (ResourceRepository.transaction)');
    await this.db.query('SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtext($1))', [searchLockKey(query)]);
    return this.search(query);
  }

  /** docs/rest.md#referential-integrity: the creates this transaction still holds count as written. */
  private async checkReferences(resource: Resource, projectId: string | undefined): Promise<void> {
    const held = this.joined && this.tx ? heldCreates.get(this.tx) : undefined;
    await checkReferencesExist(this.db, resource, projectId, held?.keys ?? new Set(), held?.checksReferences);
  }

  /** A write of `resourceType` in this transaction: a Project's may change whether it checks references. */
  private forgetProjectFlags(resourceType: string): void {
    if (resourceType === 'Project' && this.joined && this.tx) heldCreates.get(this.tx)?.checksReferences.clear();
  }

  private async runBeforeWrite(resource: Resource, previous: Resource | undefined): Promise<void> {
    for (const hook of this.hooks.for(resource.resourceType)) await hook.beforeWrite?.(resource, previous, this.auth, this.db);
  }

  /**
   * Stores a new version in ONE statement (docs/rest.md#cost-of-a-request): the current row
   * (inserted for a new id, else updated), its history row, its search-index rows and the
   * change announcement; then the hooks. `expected` (an update without a row lock): the
   * current row is replaced only while it still has that version — otherwise nothing at all is
   * written and undefined is returned (the caller takes the locked path).
   */
  private async writeVersion(
    tx: Queryable,
    input: Resource,
    version: number,
    previous: Resource | undefined,
    mode: 'insert' | 'update' | { expected: number },
  ): Promise<Resource | undefined> {
    const now = new Date().toISOString();
    const projectId = previous ? previous.meta?.project : this.scope.ownerOfNew(input.resourceType, input.id, input.meta?.project);
    const meta = { ...(input.meta ?? {}), versionId: String(version), lastUpdated: now } as Record<string, unknown>;
    if (projectId) meta.project = projectId;
    else delete meta.project;
    const resource = { ...input, meta } as Resource;
    const content = JSON.stringify(resource);
    const params: unknown[] = [resource.resourceType, resource.id, version, projectId ?? null, now, content];
    const values = '$1::text, $2::text, $3::int, $4::text, $5::timestamptz, false, $6::text';
    const parts: string[] = [];
    let guard: string | undefined;
    if (mode === 'insert') {
      parts.push(`w AS (INSERT INTO resource (resource_type, id, version_id, project_id, last_updated, deleted, content) VALUES (${values}) RETURNING 1)`);
    } else {
      const current = typeof mode === 'object' ? ` AND version_id = $${params.push(mode.expected)}::int` : '';
      parts.push(
        `w AS (UPDATE resource SET version_id = $3, project_id = $4, last_updated = $5, deleted = false, content = $6 ` +
          `WHERE resource_type = $1 AND id = $2${current} RETURNING 1)`,
      );
      if (current) guard = 'w';
    }
    parts.push(
      `h AS (INSERT INTO resource_history (resource_type, id, version_id, project_id, last_updated, deleted, content) ` +
        (guard ? `SELECT ${values} FROM ${guard})` : `VALUES (${values}))`),
    );
    // A new id has no index rows to replace (a create-on-PUT's placeholder has none either).
    parts.push(...withUcumBudget(this.ucum, () => this.searchIndex.indexCtes(resource, params, { replace: mode !== 'insert' && !(version === 1 && mode === 'update'), ...(guard ? { guard } : {}) })));
    const key = `${resource.resourceType}/${resource.id}`;
    const announcement = this.changing(tx, params, key);
    const res = await tx.query<{ written: number }>(
      `WITH ${parts.join(', ')} SELECT (SELECT count(*) FROM w)::int AS written${announcement ? `, ${announcement.sql}` : ''}`,
      params,
    );
    announcement?.emit();
    if (res.rows[0]?.written !== 1) {
      if (guard) return undefined;
      throw new Error(`${key}: the current row was not written`);
    }
    for (const hook of this.hooks.for(resource.resourceType)) await hook.afterWrite?.(tx, resource, previous, this.auth);
    return this.redact(resource);
  }

  /**
   * `changed`, for a write statement that announces the change itself: drops the cached row
   * now and returns the announcement to fold into the statement (PostgreSQL) — or undefined
   * when no other node needs to hear (PGlite, no cache).
   */
  private changing(tx: Queryable, params: unknown[], key: string): { sql: string; emit(): void } | undefined {
    const cache = this.cache;
    if (!cache) return undefined;
    cache.invalidate(key);
    if (!cache.shared) return undefined;
    tx.afterEnd?.(() => cache.invalidate(key));
    const announcement = changeAnnouncement(params, ROWS_CHANNEL, key);
    return {
      sql: announcement.sql,
      emit: () => {
        announcement.emit();
        cache.invalidate(key);
      },
    };
  }

  /**
   * Reserves the id for a create-on-PUT. Returns false when the row already exists (another
   * request won the race, or the id is taken by another project).
   */
  private async insertPlaceholder(tx: Queryable, resource: Resource): Promise<boolean> {
    await this.changed(tx, `${resource.resourceType}/${resource.id}`);
    const res = await tx.query(
      `INSERT INTO resource (resource_type, id, version_id, project_id, last_updated, deleted, content)
       VALUES ($1, $2, 0, $3, now(), true, '{}') ON CONFLICT (resource_type, id) DO NOTHING RETURNING id`,
      [resource.resourceType, resource.id, this.scope.ownerOfNew(resource.resourceType, resource.id, resource.meta?.project) ?? null],
    );
    return res.rows.length === 1;
  }

  /**
   * Inside a write transaction: row `key` changes. The cache drops it now; on PostgreSQL every
   * node hears it at commit (NOTIFY) and this one drops it again when the transaction ended.
   */
  private async changed(tx: Queryable, key: string): Promise<void> {
    const cache = this.cache;
    if (!cache) return;
    cache.invalidate(key);
    if (!cache.shared) return;
    await announceChange(tx, ROWS_CHANNEL, key);
    tx.afterEnd?.(() => cache.invalidate(key));
  }

  /**
   * The current row if the caller may see it. `fresh`: read from the database unless the cache
   * cannot be stale (PGlite) — for decisions that must not act on a row another node has
   * already replaced.
   */
  private async visibleRow(q: Queryable, resourceType: string, id: string, fresh = false): Promise<ResourceRow | undefined> {
    if (!FHIR_ID.test(id)) return undefined; // e.g. a NUL byte, which PostgreSQL text cannot even hold
    const cache = this.joined || (fresh && !this.cache?.authoritative) ? undefined : this.cache;
    const key = `${resourceType}/${id}`;
    let cached = cache?.get(key);
    if (cached && cache?.shared) {
      // Another node's commit is heard before this answer: the listening connection has caught
      // up with every change committed before this read began. Not listening: the database is
      // read; no answer within the waiting limit: 503 (docs/errors.md#database-limits).
      cached = (await heard(this.db.caughtUp(this.since))) ? cache.get(key) : undefined;
    }
    if (cached) return cached.version_id > 0 && this.scope.canSee(scopedRow(cached)) ? cached : undefined;
    const readAt = cache?.generation() ?? 0;
    const res = await q.query<ResourceRow>('SELECT * FROM resource r WHERE r.resource_type = $1 AND r.id = $2', [resourceType, id]);
    const row = res.rows[0];
    // Large rows (a CodeSystem with its concepts) are not kept: 20,000 of them would not fit.
    if (row && row.content.length <= MAX_CACHED_CONTENT) cache?.set(key, row, readAt);
    return row && row.version_id > 0 && this.scope.canSee(scopedRow(row)) ? row : undefined;
  }

  /** `visibleRow`, then the caller's access rights for `interaction` (rows outside them are absent). */
  private async accessibleRow(resourceType: string, id: string, interaction: Interaction, fresh = false): Promise<ResourceRow | undefined> {
    const row = await this.visibleRow(this.db, resourceType, id, fresh);
    if (!row) return row;
    if (row.deleted) return rowIndependent(this.scope, resourceType, interaction) ? row : undefined;
    return (await rowPasses(this.db, this.scope, resourceType, id, interaction)) ? row : undefined;
  }

  /**
   * True when a write of `resourceType` needs nothing after its statement: no hook mirrors it
   * and the caller has no access rights to check the written row against.
   */
  private writesAlone(resourceType: string, interaction: Interaction): boolean {
    if (this.hooks.for(resourceType).some((hook) => hook.afterWrite !== undefined)) return false;
    return accessSql(new SqlParams(this.scope), this.scope, 'r', interaction, resourceType) === undefined;
  }

  /** In the write's transaction: the written version must be one the caller may write (else 403, rolled back). */
  private async checkWritten(tx: Queryable, resource: Resource, interaction: Interaction): Promise<void> {
    if (!(await rowPasses(tx, this.scope, resource.resourceType, resource.id as string, interaction))) throw forbidden(OUTSIDE_ACCESS);
  }

  private async lockRow(tx: Queryable, resourceType: string, id: string): Promise<ResourceRow | undefined> {
    if (!FHIR_ID.test(id)) return undefined;
    const res = await tx.query<ResourceRow>('SELECT * FROM resource WHERE resource_type = $1 AND id = $2 FOR UPDATE', [
      resourceType,
      id,
    ]);
    return res.rows[0];
  }

  private toResource(row: ResourceRow): Resource {
    return this.redact(JSON.parse(row.content) as Resource);
  }

  private redact(resource: Resource): Resource {
    let out = resource;
    for (const hook of this.hooks.for(resource.resourceType)) if (hook.redact) out = hook.redact(out);
    // The member's access policy hides fields from everything it reads (docs/auth.md#access-policies).
    const rules = fieldRulesOf(this.auth.accessPolicy, resource.resourceType);
    return rules ? withoutHidden(out, rules) : out;
  }

  /** A write as the member's access policy lets it be stored (kept fields, write constraints). */
  private async policyWrite(input: Resource, previous: Resource | undefined): Promise<Resource> {
    const rules = fieldRulesOf(this.auth.accessPolicy, input.resourceType);
    return rules ? policyWrite(input, previous, rules, this.fhirpath) : input;
  }
}

function scopedRow(row: ResourceRow): { projectId: string | null; resourceType: string; id: string } {
  return { projectId: row.project_id, resourceType: row.resource_type, id: row.id };
}

/** `Type?a=1&b=2`: the search with its parameters sorted, so the same search is the same key in any order. */
function searchLockKey(query: SearchQuery): string {
  const params = [...query.params].sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1));
  return `${query.resourceType}?${new URLSearchParams(params).toString()}`;
}

function isoOf(value: string | Date): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** `If-Match`: the current version id, or `*` = any current (not deleted) version (RFC 9110 §13.1.1). */
function matchesVersion(ifMatch: string, row: ResourceRow): boolean {
  return ifMatch === '*' ? row.version_id > 0 && !row.deleted : ifMatch === String(row.version_id);
}

