import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../core/repository.js';
import type { BindingChecker, BindingScope, ProfileRequest, ResourceValidator, ValueSetCodes } from '../core/validation.js';
import { isObject } from '../fhir/json.js';
import { FhirError } from '../fhir/outcome.js';
import { ProfileSource, type SnapshotGenerator } from './profile-source.js';

type ValidateWith = (source: ProfileSource, scope: BindingScope, resource: Record<string, unknown>, request: ProfileRequest, bindings?: BindingChecker) => Promise<OperationOutcomeIssue[]>;

const BOUND = Symbol('profile write validator');

interface Bound extends ResourceValidator {
  [BOUND]: true;
}

/**
 * A write validator (ProfileValidator.writeValidator): structure and required bindings first (a
 * problem there → 400 as before), then the project's profile rule (a failing resource → 422).
 * Inside a transaction (`prepare`) the profile source is frozen and bindings answer from the
 * codes loaded beforehand: on PGlite a question to the database from outside the transaction
 * would wait for the transaction that waits for it.
 */
export function boundWriteValidator(
  base: ResourceValidator,
  rule: ProfileRequest,
  source: ProfileSource,
  scope: BindingScope,
  validateWith: ValidateWith,
  bindings: BindingChecker,
  frozen?: BindingChecker,
): ResourceValidator {
  const bound: Bound = {
    [BOUND]: true,
    async validate(resource, context) {
      const problems = await base.validate(resource, context);
      // Warnings of the base rules (a Questionnaire not found) do not stop the profile rule.
      if (problems.some(isError) || !isObject(resource)) return problems;
      const issues = await validateWith(source, scope, resource, rule, frozen);
      if (issues.some(isError)) throw new FhirError(422, issues);
      return problems;
    },
    async prepare(resourceTypes, resources = []) {
      const inner = await base.prepare(resourceTypes, resources);
      await warmProfiles(source, resources);
      const valueSets = source.boundValueSets();
      const codes = valueSets.length > 0 ? await (frozen ?? bindings).codesOf(valueSets, scope) : new Map<string, ValueSetCodes | undefined>();
      source.frozen = true;
      const loaded: BindingChecker = { codesOf: async (wanted) => new Map(wanted.map((v) => [v, codes.get(v)])) };
      return boundWriteValidator(inner, rule, source, scope, validateWith, bindings, loaded);
    },
  };
  return bound;
}

/**
 * The base validator, marked as already bound to a request whose project has no profile rule:
 * a Bundle's entries (inside its transaction) must not read the Project again.
 */
export function withoutRule(base: ResourceValidator): ResourceValidator {
  const bound: Bound = {
    [BOUND]: true,
    validate: (resource, context) => base.validate(resource, context),
    prepare: async (types, resources) => withoutRule(await base.prepare(types, resources)),
  };
  return bound;
}

function isError(issue: OperationOutcomeIssue): boolean {
  return issue.severity === 'error' || issue.severity === 'fatal';
}

export function isBound(validator: ResourceValidator): boolean {
  return (validator as Partial<Bound>)[BOUND] === true;
}

/** Resolves the `meta.profile`s of the resources now (so a frozen source still has them). */
export async function warmProfiles(source: ProfileSource, resources: readonly unknown[]): Promise<void> {
  for (const r of resources) {
    const claims = isObject(r) && isObject(r.meta) && Array.isArray(r.meta.profile) ? r.meta.profile : [];
    for (const claim of claims) if (typeof claim === 'string') await source.resolve(claim);
  }
}

export function newSource(repo: ResourceRepository, generate?: SnapshotGenerator): ProfileSource {
  return new ProfileSource(repo, generate);
}
