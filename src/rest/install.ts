import type { OperationRegistry } from '../core/operation.js';
import type { ProfileValidator, ResourceValidator } from '../core/validation.js';
import { everythingOperation } from './operations/everything.js';
import { validateOperation } from './operations/validate.js';

/**
 * Registers the operations of the REST layer (docs/rest.md#validate, docs/rest.md#everything):
 * `$validate` on every type (with the same validator as create and update) and `Patient/$everything`, `Encounter/$everything`.
 */
export function installRest(registry: OperationRegistry, validator: ResourceValidator, profiles: ProfileValidator): void {
  registry.register(validateOperation(validator, profiles));
  registry.register(everythingOperation('Patient'));
  registry.register(everythingOperation('Encounter'));
}
