import type { OperationOutcome, OperationOutcomeIssue } from '@medplum/fhirtypes';
import { UNDECLARED_INPUTS, type Operation, type OperationHandler } from '../../core/operation.js';
import type { RequestContext } from '../../core/context.js';
import type { ResourceValidator } from '../../core/validation.js';
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
export function validateOperation(validator: ResourceValidator): Operation {
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
    issues.push(...(await validator.validate(mode === 'create' ? withoutId : resource, { repo: ctx.repo })));
    issues.push(...(await profileIssues(ctx, type, input.profile, resource)));
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

/**
 * Profiles other than the base R4 definition of the type are not checked (docs/rest.md#validate).
 * A nominated `profile` → error (R4 Resource-validate: a server that cannot validate against the
 * nominated profile SHALL return an error); a `meta.profile` claim → warning (the resource is
 * still acceptable as a create or update, which stores the claim unchecked).
 */
async function profileIssues(ctx: RequestContext, type: string, nominated: string | undefined, resource: Record<string, unknown>): Promise<OperationOutcomeIssue[]> {
  const issues: OperationOutcomeIssue[] = [];
  if (nominated !== undefined && !isBaseProfile(type, nominated)) {
    issues.push({ severity: 'error', code: 'not-supported', details: { text: await profileText(ctx, nominated) } });
  }
  const meta = isObject(resource.meta) ? resource.meta : {};
  const claimed = Array.isArray(meta.profile) ? meta.profile : [];
  for (const [i, url] of claimed.entries()) {
    if (typeof url !== 'string' || isBaseProfile(type, url)) continue;
    issues.push({ severity: 'warning', code: 'not-supported', details: { text: await profileText(ctx, url) }, expression: [`${type}.meta.profile[${i}]`] });
  }
  return issues;
}

function isBaseProfile(type: string, url: string): boolean {
  const [base, version] = url.split('|');
  return base === `http://hl7.org/fhir/StructureDefinition/${type}` && (version === undefined || version.startsWith('4.0'));
}

async function profileText(ctx: RequestContext, url: string): Promise<string> {
  const [canonical, version] = url.split('|');
  const params: Array<[string, string]> = [['url', canonical ?? url], ['_count', '1']];
  if (version !== undefined) params.push(['version', version]);
  // A caller who may not read StructureDefinitions is told the same as for one not held.
  const held = await ctx.repo.search({ resourceType: 'StructureDefinition', params }).then(
    (found) => found.resources.length > 0,
    (err: unknown) => {
      if (err instanceof FhirError) return false;
      throw err;
    },
  );
  return held
    ? `Profile '${url}' was not checked: the StructureDefinition is held, but this server validates against the base R4 definitions only`
    : `Profile '${url}' was not checked: this server does not know it and validates against the base R4 definitions only`;
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
