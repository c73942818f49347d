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
   * content; undefined for a value set the server cannot resolve or expand (its binding is not
   * checked).
   */
  codesOf(valueSets: readonly string[]): Promise<Map<string, ValueSetCodes | undefined>>;
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
   * set not loaded is not checked).
   */
  prepare(resourceTypes: readonly string[]): Promise<ResourceValidator>;
}

/** Who a validation runs for: the caller's repository (its project's resources and shared ones). */
export interface ValidationContext {
  repo: ResourceRepository;
}
