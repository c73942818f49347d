import type { OperationOutcome, OperationOutcomeIssue } from '@medplum/fhirtypes';

/** OperationOutcome issue codes used by Lattice (FHIR R4 IssueType). */
export type IssueCode =
  | 'invalid'
  | 'structure'
  | 'required'
  | 'value'
  | 'invariant'
  | 'security'
  | 'login'
  | 'forbidden'
  | 'processing'
  | 'not-supported'
  | 'duplicate'
  | 'not-found'
  | 'deleted'
  | 'too-long'
  | 'code-invalid'
  | 'conflict'
  | 'exception'
  | 'too-costly'
  | 'throttled'
  | 'timeout'
  | 'transient'
  | 'informational';

/** Builds one error issue; `expression` names the element at fault (FHIRPath). */
export function issue(code: IssueCode, text: string, expression?: string | string[]): OperationOutcomeIssue {
  const result: OperationOutcomeIssue = { severity: 'error', code, details: { text } };
  if (expression !== undefined) result.expression = Array.isArray(expression) ? expression : [expression];
  return result;
}

/** Wraps issues in an OperationOutcome. */
export function outcome(issues: OperationOutcomeIssue[], id?: string): OperationOutcome {
  return id ? { resourceType: 'OperationOutcome', id, issue: issues } : { resourceType: 'OperationOutcome', issue: issues };
}

/** An informational OperationOutcome, e.g. the body of a successful DELETE. */
export function informational(text: string): OperationOutcome {
  return outcome([{ severity: 'information', code: 'informational', details: { text } }]);
}

/**
 * The one error type of Lattice: an HTTP status plus the OperationOutcome that explains it.
 * Anything may throw it; `src/http/errors.ts` is the only place that turns it into a response.
 */
export class FhirError extends Error {
  readonly status: number;
  readonly outcome: OperationOutcome;
  readonly headers: Record<string, string>;

  constructor(status: number, outcomeOrIssues: OperationOutcome | OperationOutcomeIssue[], headers: Record<string, string> = {}) {
    const oo = Array.isArray(outcomeOrIssues) ? outcome(outcomeOrIssues) : outcomeOrIssues;
    super(oo.issue?.[0]?.details?.text ?? 'Error');
    this.name = 'FhirError';
    this.status = status;
    this.outcome = oo;
    this.headers = headers;
  }
}

/** 400 invalid with one issue (the common case for client mistakes). */
export const badRequest = (text: string, expression?: string | string[]): FhirError =>
  new FhirError(400, [issue('invalid', text, expression)]);
export const unauthorized = (): FhirError =>
  new FhirError(401, [issue('login', 'Unauthorized')], { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (text = 'Forbidden'): FhirError => new FhirError(403, [issue('forbidden', text)]);
export const notFound = (text = 'Not found'): FhirError => new FhirError(404, [issue('not-found', text)]);
export const gone = (): FhirError => new FhirError(410, [issue('deleted', 'Deleted')]);
export const conflict = (text: string): FhirError => new FhirError(409, [issue('conflict', text)]);
export const preconditionFailed = (text = 'Version mismatch'): FhirError => new FhirError(412, [issue('conflict', text)]);
export const tooLarge = (): FhirError => new FhirError(413, [issue('too-costly', 'Request body too large')]);
export const unsupportedMediaType = (type: string): FhirError =>
  new FhirError(415, [issue('not-supported', `Unsupported content type: ${type}`)]);
export const tooManyRequests = (retryAfterSeconds: number, text = 'Too many requests'): FhirError =>
  new FhirError(429, [issue('throttled', text)], { 'Retry-After': String(retryAfterSeconds) });
export const internalError = (): FhirError => new FhirError(500, [issue('exception', 'Internal server error')]);

/**
 * Every 405 of Lattice: `not-supported` with the `Allow` header (RFC 9110 §15.5.6). The text
 * defaults to `Method <m> not allowed (allowed: …)`; operations pass their own (docs/errors.md#method-not-allowed).
 */
export const methodNotAllowed = (method: string, allowed: readonly string[], text?: string): FhirError =>
  new FhirError(405, [issue('not-supported', text ?? `Method ${method} not allowed (allowed: ${allowed.join(', ')})`)], {
    Allow: allowed.join(', '),
  });
