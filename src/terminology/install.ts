import type { Feature } from '../services.js';
import { preloadBaseTerminology } from './base-terminology.js';
import { terminologyHooks } from './hooks.js';
import { expandOperation } from './operations/expand.js';
import { importOperation } from './operations/import.js';
import { lookupOperation } from './operations/lookup.js';
import { subsumesOperation } from './operations/subsumes.js';
import { codeSystemValidateCodeOperation, valueSetValidateCodeOperation } from './operations/validate-code.js';
import { pruneInlineCodeSystems } from './request-context.js';

/** How often request-scoped (tx-resource) indexes are pruned. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Wires the terminology feature: the index hooks on CodeSystem/ValueSet writes, the terminology
 * operations, and the base R4 terminologies (see baseLoadMode).
 */
export const installTerminology: Feature = async (services) => {
  for (const hook of terminologyHooks()) services.hooks.add(hook);

  const registry = services.operations;
  if (registry) {
    registry.register(lookupOperation());
    registry.register(valueSetValidateCodeOperation());
    registry.register(codeSystemValidateCodeOperation());
    registry.register(subsumesOperation());
    registry.register(expandOperation());
    registry.register(importOperation());
  } else {
    services.log.warn('no operations registry: terminology operations are not available');
  }

  let stopped = false;
  const jobs: Array<Promise<unknown>> = [];
  const background = (name: string, job: () => Promise<unknown>) => {
    const run = job().catch((err) => {
      if (!stopped) services.log.error({ err }, `terminology: ${name} failed`);
    });
    jobs.push(run);
  };
  background('prune', () => pruneInlineCodeSystems(services.db));
  const timer = setInterval(() => background('prune', () => pruneInlineCodeSystems(services.db)), PRUNE_INTERVAL_MS);
  timer.unref();
  // `config.baseTerminology`: all base resources once per database (background), or each one
  // when a request first resolves it (lazy); either way a base canonical works from the first request.
  if (services.config.baseTerminology === 'background') {
    background('base terminology load', () => preloadBaseTerminology(services, () => stopped));
  }
  services.onClose(async () => {
    stopped = true;
    clearInterval(timer);
    await Promise.allSettled(jobs);
  });
};
