import type { Resource } from '@medplum/fhirtypes';
import { FhirError, issue } from '../../fhir/outcome.js';
import type { Operation, OperationValues } from '../../core/operation.js';
import { msg } from '../messages.js';
import { formatOutput } from '../../operations/format-output.js';
import { inputFromParameters } from '../../operations/parameters-input.js';
import { loadDefinition } from '../../operations/definitions/index.js';

/** Validations one request may carry (each is a whole `$validate-code`). */
export const MAX_VALIDATIONS = 1000;

/**
 * `ValueSet/$batch-validate-code` (docs/terminology.md#batch-validate-code): runs the given
 * `ValueSet/$validate-code` operation once per `validation`. The request's other inputs are
 * defaults; a validation's own inputs win (repeatable ones — `tx-resource`, `useSupplement` —
 * add up). Each answer is what `$validate-code` answers, or the OperationOutcome of its error.
 */
export function batchValidateCodeOperation(single: Operation): Operation {
  return {
    definition: loadDefinition('ValueSet-batch-validate-code'),
    async handler(ctx, input: OperationValues & { validation?: Resource[] }, target) {
      const { validation = [], ...defaults } = input;
      if (validation.length > MAX_VALIDATIONS) {
        throw new FhirError(413, [issue('too-costly', `Too many validations: ${validation.length} (at most ${MAX_VALIDATIONS})`)]);
      }
      const answers: Resource[] = [];
      for (const parameters of validation) {
        try {
          const own = inputFromParameters(single.definition, parameters);
          const merged = merge(defaults, own);
          if (!namesACode(merged)) throw new FhirError(400, [issue('invalid', msg.nothingToValidate())]);
          answers.push(formatOutput(single.definition, await single.handler(ctx, merged, { ...target, level: 'type' })));
        } catch (err) {
          if (!(err instanceof FhirError)) throw err;
          answers.push(err.outcome);
        }
      }
      return { validation: answers.length > 0 ? answers : undefined };
    },
  };
}

function merge(defaults: OperationValues, own: OperationValues): OperationValues {
  const merged: OperationValues = { ...defaults, ...own };
  for (const [name, value] of Object.entries(defaults)) {
    const mine: unknown = own[name];
    if (Array.isArray(value) && Array.isArray(mine)) merged[name] = [...(value as unknown[]), ...(mine as unknown[])];
  }
  return merged;
}

/** Something to validate: a coding, a codeableConcept or a code. */
function namesACode(input: OperationValues): boolean {
  return input.coding !== undefined || input.codeableConcept !== undefined || input.code !== undefined;
}
