import type { FeatureEnv } from '../core/feature.js';
import type { OperationRegistry } from '../core/operation.js';
import type { ResourceRepository } from '../core/repository.js';
import type { BindingChecker } from '../core/validation.js';
import { createBindingChecker } from './binding-checker.js';
import { preloadBaseTerminology } from './base-terminology.js';
import { expandOperation } from './operations/expand.js';
import { importOperation } from './operations/import.js';
import { lookupOperation } from './operations/lookup.js';
import { subsumesOperation } from './operations/subsumes.js';
import { codeSystemValidateCodeOperation, valueSetValidateCodeOperation } from './operations/validate-code.js';
import { pruneInlineCodeSystems } from './request-context.js';

/** How often request-scoped (tx-resource) indexes are pruned. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Wires the terminology feature: the terminology operations, the pruning of request-scoped
 * indexes and the base R4 terminologies (`config.baseTerminology`). The index hooks on
 * CodeSystem/ValueSet writes are part of the repository from the start (`terminologyHooks`, app.ts).
 * Returns the binding checker resource validation uses (`shared`: a repository that sees only
 * the shared content, where the bound value sets are resolved).
 */
export function installTerminology(env: FeatureEnv, registry: OperationRegistry, shared: ResourceRepository): { bindings: BindingChecker } {
  registry.register(lookupOperation(env));
  registry.register(valueSetValidateCodeOperation(env));
  registry.register(codeSystemValidateCodeOperation(env));
  registry.register(subsumesOperation(env));
  registry.register(expandOperation(env));
  registry.register(importOperation(env));

  let stopped = false;
  const jobs: Array<Promise<unknown>> = [];
  const background = (name: string, job: () => Promise<unknown>) => {
    const run = job().catch((err) => {
      if (!stopped) env.log.error({ err }, `terminology: ${name} failed`);
    });
    jobs.push(run);
  };
  background('prune', () => pruneInlineCodeSystems(env.db));
  const timer = setInterval(() => background('prune', () => pruneInlineCodeSystems(env.db)), PRUNE_INTERVAL_MS);
  timer.unref();
  // `config.baseTerminology`: all base resources once per database (background), or each one
  // when a request first resolves it (lazy); either way a base canonical works from the first request.
  if (env.config.baseTerminology === 'background') {
    background('base terminology load', () => preloadBaseTerminology(env, () => stopped));
  }
  env.onClose(async () => {
    stopped = true;
    clearInterval(timer);
    await Promise.allSettled(jobs);
  });
  return { bindings: createBindingChecker(env, shared) };
}
