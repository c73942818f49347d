import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { ResourceRepository } from './repository.js';

/**
 * The codes of one value set, as validation asks about them (docs/rest.md#validation).
 * `system` undefined = a bare `code` element: any member with that code matches.
 */
export interface ValueSetCodes {
  has(system: string | undefined, code: string): boolean;
}

/**
 * Answers the `required` bindings of resource validation with the terminology engine. Provided
 * by the terminology feature and wired into validation by src/app.ts, so src/fhir never imports
 * the engine.
 */
export interface BindingChecker {
  /**
   * The codes of each bound value set (canonical, optionally `url|version`), visible as shared
   * content (with `scope`: as the caller sees them, its project's too); undefined for a value set the server cannot resolve or expand (its binding is not
   * checked).
   */
  codesOf(valueSets: readonly string[], scope?: BindingScope): Promise<Map<string, ValueSetCodes | undefined>>;
}

/** Validates a resource for create, update, patch and `$validate`: structure, then required bindings. */
export interface ResourceValidator {
  /**
   * One issue per problem (empty = valid; warnings do not make it invalid); never throws for any
   * JSON input. `context.repo`: the caller's repository, where a QuestionnaireResponse's
   * Questionnaire is looked up (without it, a canonical Questionnaire is reported not found).
   */
  validate(resource: unknown, context?: ValidationContext): Promise<OperationOutcomeIssue[]>;
  /**
   * A validator for use inside a database transaction (PATCH, transaction Bundles), where the
   * terminology engine must not be asked (on PGlite it would wait for the very transaction that
   * waits for it): the codes of every value set the required bindings of these resource types
   * name are loaded now, and the returned validator answers from them only (a binding to a value
   * set not loaded is not checked). `resources`: the resources about to be written, whose
   * `meta.profile`s a write validator (ProfileValidator.writeValidator) loads now too.
   */
  prepare(resourceTypes: readonly string[], resources?: readonly unknown[]): Promise<ResourceValidator>;
}

/**
 * Where a binding's value set is resolved: the caller's repository (its project's value sets and
 * the shared ones); `key` names what it sees (its project), so answers are cached per project.
 */
export interface BindingScope {
  repo: ResourceRepository;
  key: string;
}

/** What `$validate` (or a write under the project's profile rule) asks of profile validation. */
export interface ProfileRequest {
  /** A profile nominated by `$validate`'s `profile` parameter: one the server cannot use is an error. */
  profile?: string;
  /** How a `meta.profile` claim the server does not hold is reported. */
  unknownClaim: 'error' | 'warning';
  /** Also the base definition's FHIRPath invariants (`dom-2`, `obs-6`, …) and reference targets. */
  baseInvariants: boolean;
}

/**
 * Validates a resource against StructureDefinitions (src/profiles, docs/rest.md#validate): the
 * nominated profile, the held `meta.profile` claims and the base definition's invariants. Wired
 * by src/app.ts; never throws for any JSON input (a bound reached is an issue).
 */
export interface ProfileValidator {
  validate(scope: BindingScope, resource: Record<string, unknown>, request: ProfileRequest): Promise<OperationOutcomeIssue[]>;
  /**
   * The project's write rule (`Project.validateProfilesOnWrite`, docs/rest.md#validate): undefined
   * when the project does not validate profiles on write.
   */
  writeRule(projectId: string | undefined): Promise<ProfileRequest | undefined>;
  /**
   * The validator of one caller's writes: `base`, then — when the caller's project validates
   * profiles on write — the resource's `meta.profile`s and base invariants; a resource failing
   * them makes `validate` throw a FhirError 422 carrying the OperationOutcome. Given a write
   * validator again (a Bundle entry inside the transaction), it keeps its rule and loaded profiles.
   */
  writeValidator(base: ResourceValidator, caller: { repo: ResourceRepository; projectId?: string }): Promise<ResourceValidator>;
}

/** Who a validation runs for: the caller's repository (its project's resources and shared ones). */
export interface ValidationContext {
  repo: ResourceRepository;
}
