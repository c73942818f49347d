import type { Resource } from '@medplum/fhirtypes';
import type { AuthInfo } from '../context.js';
import type { Queryable } from './database.js';

/**
 * Extension points of the repository, so features (search index, terminology index, auth
 * checks) join a write without the repository knowing them. `afterWrite`/`afterDelete` run
 * inside the write's transaction: if they throw, nothing of the change is kept.
 */
export interface ResourceHook {
  /** Resource types this hook cares about; undefined = all. */
  types?: readonly string[];
  /** Checks or adjusts a resource before it is stored (throw a FhirError to refuse). */
  beforeWrite?(resource: Resource, previous: Resource | undefined, auth: AuthInfo, tx: Queryable): Promise<void> | void;
  /** Checks a delete before it happens (throw a FhirError to refuse); `previous` is visible to `auth`. */
  beforeDelete?(previous: Resource, auth: AuthInfo, tx: Queryable): Promise<void> | void;
  /** Runs in the write transaction after the new version is stored. */
  afterWrite?(tx: Queryable, resource: Resource, previous: Resource | undefined): Promise<void>;
  /** Runs in the delete transaction after the resource is marked deleted. */
  afterDelete?(tx: Queryable, previous: Resource): Promise<void>;
  /** Removes secrets before a resource leaves the server (e.g. password hashes). */
  redact?(resource: Resource): Resource;
}

/** An ordered list of hooks, filtered by resource type. */
export class ResourceHooks {
  private readonly hooks: ResourceHook[] = [];

  add(hook: ResourceHook): void {
    this.hooks.push(hook);
  }

  for(resourceType: string): ResourceHook[] {
    return this.hooks.filter((h) => !h.types || h.types.includes(resourceType));
  }
}
