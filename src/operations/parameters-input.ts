import type { OperationDefinition } from '@medplum/fhirtypes';
import type { OperationValues } from '../core/operation.js';
import { paramsOf } from './params.js';
import { parseParametersBody } from './parse-body.js';
import { buildInput } from './parse-input.js';

/**
 * The typed input of an operation from a Parameters resource, checked exactly as a POSTed body
 * is (docs/operations.md#post, docs/operations.md#input-validation): FhirError 400 otherwise.
 * Operations that carry other operations' inputs (a batch of `$validate-code`s) read them with it.
 * The resources of the `unvalidated` input are left to the operation (Operation.resourceInput).
 */
export function inputFromParameters(definition: OperationDefinition, parameters: unknown, unvalidated?: string): OperationValues {
  return buildInput(paramsOf(definition.parameter, 'in'), parseParametersBody(parameters, unvalidated));
}
