import type { Database } from '../core/database.js';
import type { ResourceHook } from '../core/repository.js';
import { heard } from './change-feed.js';

/**
 * The hooks of every write (contract: `ResourceHook` in core), fixed when the application is
 * wired — before the repository exists, so no write can run without all of them.
 */
export class ResourceHooks {
  private readonly watching: boolean;

  constructor(private readonly hooks: readonly ResourceHook[]) {
    this.watching = hooks.some((h) => h.watches !== undefined);
  }

  for(resourceType: string): ResourceHook[] {
    return this.hooks.filter((h) => (!h.types || h.types.includes(resourceType)) && (!h.watches || h.watches(resourceType)));
  }

  /**
   * Before a write decides which hooks take part: when a hook `watches` data that other nodes
   * change, this node first hears every change committed before `since` (`Database.caughtUp`;
   * PGlite: at once). Not listening: the watching hook already answers as if it watched every
   * type (it was told `-`), so nothing is missed; a frozen listener is a 503, as for reads.
   */
  async ready(db: Database, since?: number): Promise<void> {
    if (!this.watching) return;
    await heard(db.caughtUp(since));
  }
}
