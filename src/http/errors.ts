import type { OperationOutcome } from '@medplum/fhirtypes';
import { FhirError, badRequest, internalError, issue, notFound, tooLarge, unsupportedMediaType } from '../fhir/outcome.js';

/** What the error mapping needs to know about the request that failed. */
export interface FailedRequest {
  log: { error(obj: object, msg: string): void };
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The single place where any thrown value becomes an HTTP answer. FhirErrors carry their own
 * status and OperationOutcome; framework errors that are client mistakes are mapped to the
 * contract's texts; everything else is a 500 whose details go to the log only.
 */
export function errorResponse(
  err: unknown,
  request: FailedRequest,
): { status: number; body: OperationOutcome; headers: Record<string, string> } {
  const fhirError = toFhirError(err, request);
  if (fhirError.status >= 500) request.log.error({ err }, 'request failed');
  return { status: fhirError.status, body: fhirError.outcome, headers: fhirError.headers };
}

function toFhirError(err: unknown, request: FailedRequest): FhirError {
  if (err instanceof FhirError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return tooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': // a Content-Type header that is no media type at all
      return unsupportedMediaType(String(request.headers['content-type'] ?? '').trim() || 'none');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return badRequest('Request body size did not match Content-Length');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badRequest('Content could not be parsed');
    case 'FST_ERR_BAD_URL':
      return badRequest('Invalid URL encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new FhirError(414, [issue('too-long', 'URL path segment too long')]);
    case 'FST_ERR_NOT_FOUND':
      return notFound();
  }
  if (err instanceof SyntaxError) return badRequest('Content could not be parsed');
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new FhirError(e.statusCode, [issue('invalid', e.message ?? 'Bad request')]);
  }
  return internalError();
}
