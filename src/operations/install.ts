import type { Feature } from '../services.js';
import { DefinitionPublisher } from './publish.js';
import { OperationsRegistry } from './registry.js';

/** The FHIR base path (behavior.md §1); definitions without a canonical get one below it. */
const FHIR_PREFIX = '/fhir/R4';

/**
 * Wires the operations feature: sets `services.operations` to the registry that later features
 * (terminology, admin, …) register their operations with. Each registered definition is stored
 * as shared content in the background (see `publish.ts`); shutdown waits for those writes, and
 * start-up should await `registry.published()` once every feature is installed.
 */
export const installOperations: Feature = async (services) => {
  const publisher = new DefinitionPublisher(services, services.log);
  const registry = new OperationsRegistry(publisher, () => `${services.config.publicUrl}${FHIR_PREFIX}`);
  services.operations = registry;
  services.onClose(() => registry.published().catch(() => undefined));
};
