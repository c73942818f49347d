import { FhirError, issue } from '../../fhir/outcome.js';

/** A profile whose snapshot cannot be formed (its content, or a definition it needs, is wrong or missing): 422. */
export function profileError(profileUrl: string, text: string, expression?: string): FhirError {
  return new FhirError(422, [issue('processing', `Profile ${profileUrl}: ${text}`, expression)]);
}

/** A definition the profile names that is not held: 422 `not-found`. */
export function definitionNotFound(profileUrl: string, text: string): FhirError {
  return new FhirError(422, [issue('not-found', `Profile ${profileUrl}: ${text}`)]);
}

/** Past the bound on elements one generation may create (docs/errors.md#bounds-and-timeouts): 400 `too-costly`. */
export function tooManyElements(profileUrl: string, max: number): FhirError {
  return new FhirError(400, [
    issue('too-costly', `Profile ${profileUrl}: its snapshot needs more than ${max} elements (LATTICE_PROFILE_MAX_ELEMENTS)`),
  ]);
}
