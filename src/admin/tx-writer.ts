import type { Resource } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { SystemRepository } from '../core/repository.js';
import { lockRaw } from '../storage/raw-resources.js';

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
  lock(tx: Queryable, resourceType: string, id: string): Promise<{ resource: Resource; version: number } | undefined> {
    return lockRaw(tx, resourceType, id);
  }
}
