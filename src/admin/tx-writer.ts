import { randomUUID } from 'node:crypto';
import type { Resource } from '@medplum/fhirtypes';
import { SYSTEM_AUTH } from '../context.js';
import type { Queryable } from '../storage/database.js';
import type { Repository } from '../storage/repository.js';
import type { ResourceHooks } from '../storage/resource-hooks.js';
import { stableStringify } from '../storage/stable-stringify.js';

type WriteVersion = (
  tx: Queryable,
  input: Resource,
  version: number,
  previous: Resource | undefined,
  placeholderInserted?: boolean,
) => Promise<Resource>;

/**
 * ADAPTER — remove when the Repository can join a caller's transaction.
 *
 * The invite must write a User, a profile, a ProjectMembership (and outbox/password rows) in
 * ONE transaction, but every Repository call opens its own. Rather than copy the write path
 * (current row, history row, search index, afterWrite hooks, meta.project), this calls the
 * Repository's own private `writeVersion` with our transaction. Requested repository change:
 * `repo.inTransaction(tx): Repository` (create/update/read run on `tx`, beforeWrite hooks get
 * `tx`); this class then becomes two one-line calls.
 *
 * Reads here are raw (unredacted) on purpose: an update must keep fields a redact hook hides
 * (e.g. `User.passwordHash`).
 */
export class TxWriter {
  private readonly writeVersion: WriteVersion;

  /** `repo` should be a system repository (`withAuth(SYSTEM_AUTH)`): it honours `meta.project`. */
  constructor(
    repo: Repository,
    private readonly hooks: ResourceHooks,
  ) {
    const fn = (repo as unknown as { writeVersion?: WriteVersion }).writeVersion;
    if (typeof fn !== 'function') throw new Error('Repository.writeVersion is gone: update src/admin/tx-writer.ts');
    this.writeVersion = fn.bind(repo);
  }

  /** Creates a resource (new id unless one is given) inside `tx`. */
  async create<T extends Resource>(tx: Queryable, resource: T): Promise<T> {
    const candidate = { ...resource, id: resource.id ?? randomUUID() } as T;
    await this.beforeWrite(tx, candidate, undefined);
    return (await this.writeVersion(tx, candidate, 1, undefined)) as T;
  }

  /**
   * Writes a new version of an existing resource inside `tx` (row locked first). Content equal
   * to the current version writes nothing, as a REST update would.
   */
  async update<T extends Resource>(tx: Queryable, resource: T): Promise<T> {
    const current = await this.lock(tx, resource.resourceType, resource.id as string);
    if (!current) throw new Error(`${resource.resourceType}/${resource.id} vanished inside its transaction`);
    if (sameContent(current.resource, resource)) return current.resource as T;
    await this.beforeWrite(tx, resource, current.resource);
    return (await this.writeVersion(tx, resource, current.version + 1, current.resource)) as T;
  }

  /** The current, non-deleted version, unredacted, locked for the rest of `tx`. */
  async lock(tx: Queryable, resourceType: string, id: string): Promise<{ resource: Resource; version: number } | undefined> {
    const res = await tx.query<{ content: string; version_id: number }>(
      `SELECT content, version_id FROM resource
       WHERE resource_type = $1 AND id = $2 AND NOT deleted AND version_id > 0 FOR UPDATE`,
      [resourceType, id],
    );
    const row = res.rows[0];
    return row ? { resource: JSON.parse(row.content) as Resource, version: row.version_id } : undefined;
  }

  private async beforeWrite(tx: Queryable, resource: Resource, previous: Resource | undefined): Promise<void> {
    // The Repository hands hooks its Database; inside our transaction that would wait for the
    // transaction itself on PGlite (one connection), so hooks get `tx`, as their type promises.
    for (const hook of this.hooks.for(resource.resourceType)) {
      await hook.beforeWrite?.(resource, previous, SYSTEM_AUTH, tx);
    }
  }
}

/** Equal up to server-managed meta (versionId, lastUpdated, project). */
function sameContent(a: Resource, b: Resource): boolean {
  const strip = (r: Resource): unknown => {
    const { versionId: _v, lastUpdated: _l, project: _p, ...meta } = (r.meta ?? {}) as Record<string, unknown>;
    const copy = { ...r } as Record<string, unknown>;
    if (Object.keys(meta).length > 0) copy.meta = meta;
    else delete copy.meta;
    return copy;
  };
  return stableStringify(strip(a)) === stableStringify(strip(b));
}
