import type { OperationOutcomeIssue, Project } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../core/repository.js';
import type { BindingChecker, BindingScope, ProfileRequest, ProfileValidator } from '../core/validation.js';
import type { FhirPathEvaluator } from '../fhir/fhirpath-evaluator.js';
import { isObject } from '../fhir/json.js';
import { baseProfile, isBaseTypeUrl, ProfileSource, splitCanonical, type Resolved, type SnapshotGenerator } from './profile-source.js';
import { checkBindings } from './validate/bindings.js';
import { validateAgainst, walker } from './validate/walk.js';
import { LimitReached, WalkContext, type ProfileLimits } from './validate/walk-context.js';
import { boundWriteValidator, isBound, withoutRule } from './write-validator.js';

export interface ProfileValidatorOptions {
  /** The terminology engine's answer to bound value sets. */
  bindings: BindingChecker;
  limits: ProfileLimits;
  /** The system repository: reads the caller's Project for its write rule. */
  system: ResourceRepository;
  /** Snapshot generation for held profiles without one (src/profiles/snapshot). */
  generate?: SnapshotGenerator;
  /** Evaluates the invariants the R4 definitions do not state (a held profile's): off the HTTP thread, with `LATTICE_FHIRPATH_TIMEOUT`. */
  fhirpath?: FhirPathEvaluator;
}

type ProjectSettings = Project & { validateProfilesOnWrite?: boolean; allowUnknownProfiles?: boolean };

const LIMIT_SETTINGS: Record<string, string> = { work: 'LATTICE_PROFILE_MAX_WORK', invariants: 'LATTICE_PROFILE_MAX_INVARIANTS' };

/** The profile validator (docs/rest.md#validate) over the R4 definitions and the profiles the caller sees. */
export function createProfileValidator(options: ProfileValidatorOptions): ProfileValidator & {
  /** As `validate`, with a source the caller keeps (a frozen one inside a transaction). */
  validateWith(source: ProfileSource, scope: BindingScope, resource: Record<string, unknown>, request: ProfileRequest, bindings?: BindingChecker): Promise<OperationOutcomeIssue[]>;
} {
  const validateWith = async (source: ProfileSource, scope: BindingScope, resource: Record<string, unknown>, request: ProfileRequest, bindings = options.bindings) => {
    const ctx = new WalkContext(walker, source, options.limits, resource, options.fhirpath);
    const type = typeof resource.resourceType === 'string' ? resource.resourceType : '';
    const at = { expr: type, base: type, path: type, type };
    try {
      const base = request.baseInvariants ? baseProfile(type) : undefined;
      if (base) await validateAgainst(ctx, base, resource, at, 'base');
      if (request.profile !== undefined && !isBaseTypeUrl(splitCanonical(request.profile)[0])) {
        const resolved = await source.resolve(request.profile);
        if (usable(ctx, resolved, request.profile, type, 'error', type)) await validateAgainst(ctx, resolved.profile, resource, at, 'profile');
      }
      const meta = isObject(resource.meta) ? resource.meta : {};
      const claims = Array.isArray(meta.profile) ? meta.profile : [];
      for (const [i, claim] of claims.entries()) {
        if (typeof claim !== 'string' || claim === request.profile || isBaseTypeUrl(splitCanonical(claim)[0])) continue;
        const resolved = await source.resolve(claim);
        if (usable(ctx, resolved, claim, type, request.unknownClaim, `${type}.meta.profile[${i}]`)) await validateAgainst(ctx, resolved.profile, resource, at, 'profile');
      }
    } catch (err) {
      if (!(err instanceof LimitReached)) throw err;
      const [kind, bound] = err.message.split(':');
      ctx.add('error', 'too-costly', `Validation stopped: it needed more than ${bound} ${kind === 'work' ? 'steps' : 'invariant evaluations'} (${LIMIT_SETTINGS[kind]}); the resource was not fully checked`, type);
    }
    await checkBindings(ctx, bindings, scope);
    return ctx.issues;
  };
  const writeRule = async (projectId: string | undefined): Promise<ProfileRequest | undefined> => {
    if (projectId === undefined) return undefined;
    // Lattice's elements of Project (src/fhir/definitions.ts), not in Medplum's type.
    const settings = await options.system.tryRead<ProjectSettings>('Project', projectId);
    if (settings?.validateProfilesOnWrite !== true) return undefined;
    return { unknownClaim: settings.allowUnknownProfiles === true ? 'warning' : 'error', baseInvariants: true };
  };
  return {
    validateWith,
    validate: (scope, resource, request) => validateWith(new ProfileSource(scope.repo, options.generate), scope, resource, request),
    writeRule,
    async writeValidator(base, caller) {
      if (isBound(base)) return base;
      const rule = await writeRule(caller.projectId);
      if (!rule) return withoutRule(base);
      const source = new ProfileSource(caller.repo, options.generate);
      return boundWriteValidator(base, rule, source, { repo: caller.repo, key: caller.projectId ?? '' }, validateWith, options.bindings);
    },
  };
}

/** A resolved profile that can be validated against; otherwise the issue that says why not. */
function usable(ctx: WalkContext, resolved: Resolved, canonical: string, type: string, severity: 'error' | 'warning', expr: string): resolved is Extract<Resolved, { found: 'yes' }> {
  if (resolved.found === 'yes') {
    if (resolved.profile.type === type) return true;
    ctx.add('error', 'invalid', `Profile '${canonical}' constrains ${resolved.profile.type}, not ${type}`, expr);
    return false;
  }
  const text =
    resolved.found === 'no'
      ? `Profile '${canonical}' is not known to this server: the resource was not checked against it`
      : resolved.found === 'no-snapshot'
        ? `Profile '${canonical}' is held without a snapshot, and ${resolved.reason ? `its snapshot could not be generated (${resolved.reason})` : 'snapshot generation is not available'}: the resource was not checked against it`
        : `Profile '${canonical}' could not be loaded inside a transaction: the resource was not checked against it`;
  ctx.add(resolved.found === 'unavailable' ? 'warning' : severity, 'not-supported', text, expr, resolved.found === 'no' ? 'Validation_VAL_Profile_Unknown' : undefined);
  return false;
}
