import type { FeatureEnv } from '../core/feature.js';
import { DefinitionPublisher } from './publish.js';
import { OperationsRegistry } from './registry.js';
import { versionsOperation } from './versions.js';

/** The FHIR base path (docs/errors.md); definitions without a canonical get one below it. */
const FHIR_PREFIX = '/fhir/R4';

/**
 * Creates the operations registry that later features (terminology, …) register their
 * operations with (the framework's own `$versions` is registered here). Each registered
 * definition is stored as shared content in the background
 * (see `publish.ts`); shutdown waits for those writes, and start-up awaits
 * `registry.published()` once every feature is installed.
 */
export function installOperations(env: FeatureEnv): OperationsRegistry {
  const publisher = new DefinitionPublisher(env.system, env.log);
  const registry = new OperationsRegistry(publisher, () => `${env.config.publicUrl}${FHIR_PREFIX}`);
  env.onClose(() => registry.published().catch(() => undefined));
  registry.register(versionsOperation());
  return registry;
}
