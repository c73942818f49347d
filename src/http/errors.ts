import type { OperationOutcome } from '@medplum/fhirtypes';
import { FhirError, badRequest, internalError, notFound, tooLarge, unsupportedMediaType } from '../fhir/outcome.js';

/**
 * The single place where any thrown value becomes an HTTP answer. FhirErrors carry their own
 * status and OperationOutcome; framework errors that are client mistakes are mapped to the
 * contract's texts; everything else is a 500 whose details go to the log only.
 */
export function errorResponse(
  err: unknown,
  log: { error(obj: object, msg: string): void },
): { status: number; body: OperationOutcome; headers: Record<string, string> } {
  const fhirError = toFhirError(err);
  if (fhirError.status >= 500) log.error({ err }, 'request failed');
  return { status: fhirError.status, body: fhirError.outcome, headers: fhirError.headers };
}

function toFhirError(err: unknown): FhirError {
  if (err instanceof FhirError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string; contentType?: string };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return tooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return unsupportedMediaType(e.contentType ?? 'unknown');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badRequest('Content could not be parsed');
    case 'FST_ERR_NOT_FOUND':
      return notFound();
  }
  if (err instanceof SyntaxError) return badRequest('Content could not be parsed');
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return badRequest(e.message ?? 'Bad request');
  }
  return internalError();
}
