import type { TerminologyCapabilities } from '@medplum/fhirtypes';
import type { AppRoute } from '../core/app-route.js';
import type { RequestContext } from '../core/context.js';
import type { FeatureEnv } from '../core/feature.js';
import type { OperationRegistry } from '../core/operation.js';
import type { ResourceRepository } from '../core/repository.js';
import type { BindingChecker } from '../core/validation.js';
import { createBindingChecker } from './engine/binding-checker.js';
import { searchTerminology } from './engine/search-codes.js';
import type { SearchTerminology } from '../core/search.js';
import { preloadBaseTerminology } from './store/base-terminology.js';
import { keptTerminologyCapabilities, type Software } from './operations/capabilities.js';
import { batchValidateCodeOperation } from './operations/batch-validate-code.js';
import { expandOperation } from './operations/expand.js';
import { importOperation } from './operations/import.js';
import { importRoute } from './operations/import-route.js';
import { lookupOperation } from './operations/lookup.js';
import { subsumesOperation } from './operations/subsumes.js';
import { compareOperation } from './operations/compare.js';
import { translateOperation } from './operations/translate.js';
import { codeSystemValidateCodeOperation, valueSetValidateCodeOperation } from './operations/validate-code.js';
import { terminologyCache } from './providers/fhir/index-cache.js';
import { snapshotFolder, useSnapshotFolder } from './providers/fhir/index-snapshot.js';
import { providerFor } from './providers/select.js';
import { pruneInlineCodeSystems } from './store/code-system-store.js';
import { persistedCodeSystems, resolveCodeSystem } from './engine/resolve.js';
import { isBuiltin } from './providers/builtin.js';
import type { TermContext } from './types.js';
import { parseVersionRules } from './versions.js';

/** How often request-scoped (tx-resource) indexes are pruned. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** What the terminology feature gives the rest of the application. */
export interface TerminologyFeature {
  /** The TerminologyCapabilities statement (`GET [base]/metadata?mode=terminology`) for a caller. */
  capabilities: (ctx: RequestContext, software: Software) => Promise<TerminologyCapabilities>;
  /** Its non-FHIR routes: `POST /admin/terminology/import` (import-route.ts). */
  routes: AppRoute[];
  /** The codes of bound value sets, for resource validation (binding-checker.ts). */
  bindings: BindingChecker;
  /** Subsumption and value-set membership for search's token modifiers (search-codes.ts). */
  search: SearchTerminology;
}

/**
 * Wires the terminology feature: the terminology operations, the import route (returned), the pruning of request-scoped
 * indexes and the base R4 terminologies (`config.baseTerminology`). The index hooks on
 * CodeSystem/ValueSet writes are part of the repository from the start (`terminologyHooks`, app.ts).
 * Returns the binding checker resource validation uses (`shared`: a repository that sees only
 * the shared content, where the bound value sets are resolved).
 */
export function installTerminology(env: FeatureEnv, registry: OperationRegistry, shared: ResourceRepository): TerminologyFeature {
  registry.register(lookupOperation(env));
  const validateCode = valueSetValidateCodeOperation(env);
  registry.register(validateCode);
  registry.register(codeSystemValidateCodeOperation(env));
  registry.register(subsumesOperation(env));
  registry.register(expandOperation(env));
  registry.register(compareOperation(env));
  registry.register(importOperation(env));
  registry.register(translateOperation(env));
  registry.register(batchValidateCodeOperation(validateCode));

  let stopped = false;
  const jobs: Array<Promise<unknown>> = [];
  const background = (name: string, job: () => Promise<unknown>) => {
    const run = job().catch((err) => {
      if (!stopped) env.log.error({ err }, `terminology: ${name} failed`);
    });
    jobs.push(run);
  };
  // The in-memory index cache hears index changes from every node; until it listens it keeps nothing.
  const cache = terminologyCache(env.db, env.config.txCacheMb * 1024 * 1024, env.log);
  // File copies of the persisted indexes (beside the data folder, or one per PostgreSQL database).
  const folder = snapshotFolder(env.config);
  if (folder) useSnapshotFolder(env.db, folder);
  background('index cache', async () => {
    await cache.start();
    // `config.txPreload`: indexes opened or built as the server starts rather than on first use
    // (a request meanwhile joins the opening under way). `persisted`: every code system whose
    // index was persisted (an imported SNOMED CT edition, LOINC), read from its files while the
    // rest of the start waits on the database — ready when the server listens, or soon after.
    const tc: TermContext = { db: env.db, repo: env.system, env, log: env.log, inlineCodeSystems: [], inlineValueSets: [], supplements: [], memo: new Map(), versionRules: parseVersionRules({}) };
    for (const canonical of env.config.txPreload) {
      if (stopped) return;
      const systems = canonical === 'persisted' ? await persistedCodeSystems(tc) : [await resolveCodeSystem(tc, canonical)];
      if (canonical !== 'persisted' && systems[0] === undefined) env.log.warn({ canonical }, 'terminology: LATTICE_TX_PRELOAD names an unknown code system');
      for (const cs of systems) {
        if (stopped) return;
        if (!cs || isBuiltin(cs)) continue; // built in: nothing to index
        // A question to its provider builds what else it answers from (a SNOMED CT edition's
        // graph, read at the same time as the index).
        await Promise.all([cache.index(cs), providerFor(tc, cs).findConcepts([])]);
      }
    }
  });
  // Maintenance begins once the server listens: until then the database serves the start.
  env.onListening(() => {
    if (stopped) return;
    background('prune', () => pruneInlineCodeSystems(env.db));
    // `config.baseTerminology`: all base resources once per database (background), or each one
    // when a request first resolves it (lazy); either way a base canonical works from the first request.
    if (env.config.baseTerminology === 'background') {
      background('base terminology load', () => preloadBaseTerminology(env, () => stopped));
    }
  });
  const timer = setInterval(() => background('prune', () => pruneInlineCodeSystems(env.db)), PRUNE_INTERVAL_MS);
  timer.unref();
  env.onClose(async () => {
    stopped = true;
    clearInterval(timer);
    cache.stop();
    await Promise.allSettled(jobs);
  });
  return {
    capabilities: (ctx, software) => keptTerminologyCapabilities(env, ctx, software, registry.definitions()),
    routes: [importRoute(env)],
    bindings: createBindingChecker(env, shared),
    search: searchTerminology(env),
  };
}
