import type { ResourceHook } from '../core/repository.js';

/**
 * The hooks of every write (contract: `ResourceHook` in core), fixed when the application is
 * wired — before the repository exists, so no write can run without all of them.
 */
export class ResourceHooks {
  constructor(private readonly hooks: readonly ResourceHook[]) {}

  for(resourceType: string): ResourceHook[] {
    return this.hooks.filter((h) => !h.types || h.types.includes(resourceType));
  }
}
