import type { CodeSystem, Resource, ValueSet } from '@medplum/fhirtypes';
import type { ResourceHook } from '../core/repository.js';
import { indexCodeSystem, removeCodeSystemIndex } from './store/code-system-store.js';
import { announceValueSetChange } from './providers/fhir/index-cache.js';

/**
 * Keeps the terminology index in step with stored resources; each write announces the one
 * resource it changed (index-cache.ts), which every node's index cache and binding checker
 * (binding-checker.ts) hear. Both hooks run inside the write transaction
 * (storage/resource-hooks.ts): a CodeSystem is searchable by the engine exactly when its write
 * commits, an update re-indexes it, a delete removes the index, and a failure to index rolls the
 * write back.
 */
export function terminologyHooks(): ResourceHook[] {
  return [
    {
      types: ['CodeSystem'],
      async afterWrite(tx, resource) {
        const cs = resource as CodeSystem;
        await indexCodeSystem(tx, cs, {
          resourceId: cs.id as string,
          projectId: projectOf(resource),
          lastUpdated: resource.meta?.lastUpdated ?? new Date().toISOString(),
        });
      },
      async afterDelete(tx, previous) {
        await removeCodeSystemIndex(tx, previous.id as string);
      },
    },
    {
      types: ['ValueSet'],
      async afterWrite(tx, resource) {
        const vs = resource as ValueSet;
        await tx.query(
          `INSERT INTO tx_value_set (resource_id, project_id, url, version, last_updated) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (resource_id) DO UPDATE SET project_id = $2, url = $3, version = $4, last_updated = $5`,
          [vs.id, projectOf(resource) ?? null, vs.url ?? '', vs.version ?? null, resource.meta?.lastUpdated ?? new Date().toISOString()],
        );
        await announceValueSetChange(tx, vs.id as string);
      },
      async afterDelete(tx, previous) {
        await tx.query('DELETE FROM tx_value_set WHERE resource_id = $1', [previous.id]);
        await announceValueSetChange(tx, previous.id as string);
      },
    },
  ];
}

function projectOf(resource: Resource): string | undefined {
  return (resource.meta)?.project;
}
