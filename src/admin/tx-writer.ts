import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { SystemRepository } from '../core/repository.js';

/**
 * Writes of one invite (or password change) inside the caller's transaction, through the
 * Repository joined to it (`inTransaction`), so the current row, history, search index and
 * hooks are written exactly as for any other change — and roll back together.
 * Reads here are raw (unredacted) on purpose: an update must keep fields a redact hook hides
 * (e.g. `User.passwordHash`).
 */
export class TxWriter {
  /** The system repository: it honours `meta.project`. */
  constructor(private readonly repo: SystemRepository) {}

  /** Creates a resource (new id unless one is given) inside `tx`. */
  create<T extends Resource>(tx: Queryable, resource: T): Promise<T> {
    return this.repo.inTransaction(tx).create(resource, { id: resource.id });
  }

  /** Writes a new version inside `tx`; content equal to the current version writes nothing. */
  async update<T extends Resource>(tx: Queryable, resource: T): Promise<T> {
    return (await this.repo.inTransaction(tx).update(resource)).resource as T;
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
}
