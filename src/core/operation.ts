import type { OperationDefinition } from '@medplum/fhirtypes';
import type { RequestContext } from './context.js';
import type { FhirRequest, FhirResult } from './fhir-request.js';
import type { PreparedAnswer } from './reusable-answer.js';

/**
 * An operation = an OperationDefinition (data) + a typed handler. The framework
 * (`src/operations/`) derives routes, GET eligibility, input parsing/validation and output
 * formatting from the definition; handlers never see HTTP or Parameters.
 *
 * Input/output values are plain objects keyed by parameter name:
 * - single-valued parameter (max "1") → the value itself (string, boolean, number, Coding, …);
 * - multi-valued parameter (max "*" or > 1) → an array of values;
 * - parameter with `part`s → an object keyed by part name (same rules, recursively);
 * - resource-typed parameter → the resource;
 * - an operation whose only out-parameter is `return` → the handler returns `{ return: resource }`
 *   and the framework answers with that resource as the body.
 * Absent values are `undefined` (outputs: omitted). A handler may also return a kept answer,
 * already formatted and serialised (a {@link PreparedAnswer}).
 */
export type OperationValues = Record<string, unknown>;

/** Where the operation was invoked. */
export interface OperationTarget {
  level: 'system' | 'type' | 'instance';
  resourceType?: string;
  /** Instance id for instance-level calls. */
  id?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a handler's input type is its own; the framework checks it against the definition
export type OperationHandler<I extends OperationValues = any, O extends OperationValues = OperationValues> = (
  ctx: RequestContext,
  input: I,
  target: OperationTarget,
) => Promise<O | PreparedAnswer>;

export interface Operation {
  definition: OperationDefinition;
  handler: OperationHandler;
  /**
   * Also answer at instance level even when the definition says `instance: false`
   * (docs/operations.md#routes: the terminology operations are answered on `[base]/Type/<id>/$op`).
   */
  alsoInstance?: boolean;
  /**
   * A resource-typed input the handler validates itself (docs/operations.md#post), e.g.
   * `$validate`'s `resource`: the framework does not validate the resource it carries, and a
   * POST body that is a resource other than Parameters is taken as this input.
   */
  resourceInput?: string;
  /**
   * A POST without a body is accepted and read like a GET, its inputs from the query string
   * (docs/operations.md#post): clients call `$everything` so.
   */
  emptyPost?: boolean;
  /**
   * The handler is told which supplied inputs the definition does not declare (names of
   * Parameters entries, or of query parameters other than the `_`-prefixed general ones), as a
   * string array under `input[UNDECLARED_INPUTS]`, instead of their being silently dropped:
   * `$validate` reports them rather than answering `All OK` for what it did not check.
   */
  reportUndeclared?: boolean;
  /**
   * Answers the invocation itself, with its own status and headers, instead of output Parameters
   * (docs/operations.md#asynchronous-operations: Bulk Data `$export` answers 202 with
   * `Content-Location`): the framework parses and checks the input as for any operation, then
   * calls this instead of `handler` and writes what it returns.
   */
  respond?(req: FhirRequest, input: OperationValues, target: OperationTarget): Promise<FhirResult>;
  /**
   * Answers given again to the same GET request line, or POST request line and body, before its input is read
   * (src/core/reusable-answer.ts; docs/terminology.md#answer-cache).
   */
  keptAnswers?: KeptAnswers;
}

/** Kept answers of an operation, by request line (see `Operation.keptAnswers`). */
export interface KeptAnswers {
  /**
   * The answer kept for this request, or `keep`: called with the answer the handler then gives
   * when it is a PreparedAnswer (undefined: this request's answer is not kept).
   */
  find(req: FhirRequest, target: OperationTarget): Promise<{ answer: PreparedAnswer } | { keep(answer: PreparedAnswer): void } | undefined>;
}

/** The input key under which a `reportUndeclared` operation receives the undeclared input names. */
export const UNDECLARED_INPUTS = '#undeclared';

/** Where a `$code` request points: `[base]/$code`, `[base]/Type/$code` or `[base]/Type/id/$code`. */
export interface OperationCall {
  code: string;
  resourceType?: string;
  id?: string;
}

/** A CapabilityStatement entry of one registered operation. */
export interface OperationCapability {
  name: string;
  definition: string;
  /** Resource types it answers at type or instance level. */
  resourceTypes: string[];
  system: boolean;
}

/** Answers operation invocations; implemented by `src/operations/`. */
export interface OperationDispatcher {
  dispatch(req: FhirRequest, call: OperationCall): Promise<FhirResult>;
  /** One entry per registered operation, for the CapabilityStatement. */
  capabilities(): OperationCapability[];
}

/** The registry features add operations to: registering adds routes, definition and metadata entry. */
export interface OperationRegistry extends OperationDispatcher {
  register(operation: Operation): void;
  /** The served definitions of every registered operation, in registration order. */
  definitions(): OperationDefinition[];
}
