import type { OperationOutcome, OperationOutcomeIssue } from '@medplum/fhirtypes';
import { UNDECLARED_INPUTS, type Operation, type OperationHandler } from '../../core/operation.js';
import type { ProfileValidator, ResourceValidator } from '../../core/validation.js';
import { isObject } from '../../fhir/json.js';
import { FhirError, badRequest, issue } from '../../fhir/outcome.js';
import { loadDefinition } from '../../operations/definitions/index.js';

interface ValidateInput {
  resource?: Record<string, unknown>;
  mode?: string;
  profile?: string;
  [UNDECLARED_INPUTS]?: string[];
}

const MODES = ['create', 'update', 'delete'];

/**
 * `[base]/<Type>/$validate` and `[base]/<Type>/<id>/$validate` (docs/rest.md#validate): would the
 * resource be accepted — in general, as a create, as an update of `<id>`, or would `<id>` be
 * deleted? The answer is an OperationOutcome, 200 whether the resource is valid or not (R4
 * Resource-validate); nothing is stored. A 4xx means the question itself is malformed (no
 * resource, a bad mode) or the instance is not visible.
 */
export function validateOperation(validator: ResourceValidator, profiles: ProfileValidator): Operation {
  const handler: OperationHandler = async (ctx, input: ValidateInput, target) => {
    const type = target.resourceType as string;
    const mode = input.mode;
    if (mode !== undefined && !MODES.includes(mode)) {
      throw badRequest(`Invalid mode '${mode}': expected create, update or delete`, 'mode');
    }
    if ((mode === 'update' || mode === 'delete') && target.id === undefined) {
      throw badRequest(`Mode ${mode} needs an instance: [base]/${type}/<id>/$validate`, 'mode');
    }
    // The instance must be visible and current (404/410 as for read).
    const current = target.id !== undefined ? await ctx.repo.read(type, target.id) : undefined;
    const issues: OperationOutcomeIssue[] = undeclaredIssues(input[UNDECLARED_INPUTS] ?? []);
    if (mode === 'delete') {
      issues.push(...writeIssues(() => ctx.repo.scope.checkDelete({ projectId: current?.meta?.project, resourceType: type, id: target.id })));
      issues.push(...writeIssues(() => ctx.repo.scope.checkAccess(type, 'd')));
      return { return: outcome(issues) };
    }
    const resource = input.resource;
    if (!isObject(resource)) throw badRequest("Parameter 'resource' is required unless mode is delete", 'resource');
    if (resource.resourceType !== type) {
      issues.push(issue('invalid', `Resource type '${String(resource.resourceType)}' does not match URL type '${type}'`, 'resourceType'));
      return { return: outcome(issues) };
    }
    // As create and update treat it: a create ignores the id, an update needs the URL's.
    const { id: _ignored, ...withoutId } = resource;
    const structural = await validator.validate(mode === 'create' ? withoutId : resource, { repo: ctx.repo });
    issues.push(...structural);
    // Profiles: the nominated one (unknown → error), the held meta.profile claims (unknown →
    // warning) and, for a resource without structural errors (warnings, such as a Questionnaire
    // not found, do not count), the base definition's invariants. The base rules that are also
    // invariants (bdl-*, que-*, dom-*, …) are then met, so nothing is reported twice.
    const scope = { repo: ctx.repo, key: ctx.auth.projectId ?? '' };
    const baseInvariants = !structural.some((i) => i.severity === 'error' || i.severity === 'fatal');
    issues.push(...(await profiles.validate(scope, resource, { profile: input.profile, unknownClaim: 'warning', baseInvariants })));
    if (mode === 'create') issues.push(...writeIssues(() => ctx.repo.scope.checkCreate(type)));
    if (mode === 'create') issues.push(...writeIssues(() => ctx.repo.scope.checkAccess(type, 'c')));
    if (mode === 'update') {
      if (resource.id !== target.id) issues.push(issue('invalid', 'Resource ID does not match URL', `${type}.id`));
      issues.push(...writeIssues(() => ctx.repo.scope.checkWrite({ projectId: current?.meta?.project, resourceType: type, id: target.id })));
      issues.push(...writeIssues(() => ctx.repo.scope.checkAccess(type, 'u')));
    }
    return { return: outcome(issues) };
  };
  return { definition: loadDefinition('Resource-validate'), handler, resourceInput: 'resource', reportUndeclared: true };
}

/**
 * An input `$validate` does not know was not acted on: an error, since the check it may have
 * asked for (a misspelt `mode`, a newer parameter) was not made and the answer must not read as
 * a pass for it.
 */
function undeclaredIssues(names: string[]): OperationOutcomeIssue[] {
  return names.map((name) => ({ severity: 'error', code: 'not-supported', details: { text: `Unknown parameter '${name}': $validate takes resource, mode and profile; nothing was checked for it` } }));
}

/** A refused write (403) as an issue of the outcome: the write would not be accepted. */
function writeIssues(check: () => void): OperationOutcomeIssue[] {
  try {
    check();
    return [];
  } catch (err) {
    if (err instanceof FhirError) return err.outcome.issue ?? [];
    throw err;
  }
}

function outcome(issues: OperationOutcomeIssue[]): OperationOutcome {
  if (issues.length > 0) return { resourceType: 'OperationOutcome', issue: issues };
  return { resourceType: 'OperationOutcome', issue: [{ severity: 'information', code: 'informational', details: { text: 'All OK' } }] };
}
