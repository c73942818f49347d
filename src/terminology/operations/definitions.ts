import type { OperationDefinition, OperationDefinitionParameter } from '@medplum/fhirtypes';
import { loadDefinition, type DefinitionId } from '../../operations/definitions/index.js';

/**
 * The shipped terminology OperationDefinitions, completed with the tx-ecosystem parameters the
 * engine accepts and answers (behavior.md §4: the definition served is exactly what the
 * operation accepts and returns). A parameter already present in the shipped file is kept as
 * is, so these additions retire themselves once the generator (src/operations/definitions)
 * declares them.
 */

type Param = OperationDefinitionParameter;

const p = (use: 'in' | 'out', name: string, max: string, type: string, documentation: string): Param => ({
  name,
  use,
  min: 0,
  max,
  type,
  documentation,
});

const TX_RESOURCE = p('in', 'tx-resource', '*', 'Resource', 'Additional resources (CodeSystem, ValueSet) to use for this request only');
const USE_SUPPLEMENT = p('in', 'useSupplement', '*', 'canonical', 'A CodeSystem supplement to apply');

const VALIDATE_IN: Param[] = [
  p('in', 'activeOnly', '1', 'boolean', 'Only active concepts are valid'),
  p('in', 'lenient-display-validation', '1', 'boolean', 'A wrong display is a warning, not an error'),
  p('in', 'valueset-membership-only', '1', 'boolean', 'Only check value-set membership (no code-system or display checks)'),
];

const VALIDATE_OUT: Param[] = [
  p('out', 'inactive', '1', 'boolean', 'The concept is inactive'),
  p('out', 'status', '1', 'code', 'The status of the concept (when it has one)'),
  p('out', 'normalized-code', '1', 'code', 'The code as the code system writes it (case-insensitive systems)'),
  p('out', 'x-unknown-system', '1', 'canonical', 'A code system the server does not know'),
  p('out', 'x-caused-by-unknown-system', '1', 'canonical', 'The value set cannot be evaluated because this code system is unknown'),
];

const ADDITIONS: Partial<Record<DefinitionId, Param[]>> = {
  'CodeSystem-lookup': [TX_RESOURCE, USE_SUPPLEMENT, p('out', 'abstract', '1', 'boolean', 'The concept is abstract (not selectable)')],
  'ValueSet-validate-code': [p('in', 'inferSystem', '1', 'boolean', 'Infer the system of a bare code from the value set'), ...VALIDATE_IN, ...VALIDATE_OUT],
  'CodeSystem-validate-code': [...VALIDATE_IN, ...VALIDATE_OUT],
  'CodeSystem-subsumes': [TX_RESOURCE],
  'ValueSet-expand': [],
};

/** The shipped definition `id` plus the engine's parameters it lacks. */
export function terminologyDefinition(id: DefinitionId): OperationDefinition {
  const definition = loadDefinition(id);
  const params = definition.parameter ?? [];
  for (const added of ADDITIONS[id] ?? []) {
    if (params.some((q) => q.use === added.use && q.name === added.name)) continue;
    // Inputs go after the last input, outputs at the end (definition order = output order).
    const lastIn = params.map((q) => q.use).lastIndexOf('in');
    if (added.use === 'in') params.splice(lastIn + 1, 0, added);
    else params.push(added);
  }
  definition.parameter = params;
  return definition;
}
