import { badRequest } from '../fhir/outcome.js';

/** A parsed request body and the encoding it came in. */
export interface ParsedBody {
  /**
   * `json-patch`: an `application/json-patch+json` body (accepted by FHIR PATCH only);
   * `stream`: the unread request stream of a route with `body: 'stream'`.
   */
  kind: 'json' | 'form' | 'json-patch' | 'stream';
  contentType: string;
  value: unknown;
}

/**
 * Splits a raw URL into the path below `prefix` (segments percent-decoded, so `%24` is `$`)
 * and the query pairs in order. An encoded slash stays `%2F`: it is part of its segment (and
 * so makes e.g. an invalid id), it never splits the path.
 */
export function requestInfo(url: string, prefix: string): { path: string; query: Array<[string, string]> } {
  const q = url.indexOf('?');
  const rawPath = (q >= 0 ? url.slice(0, q) : url).slice(prefix.length);
  const rawQuery = q >= 0 ? url.slice(q + 1) : '';
  let path = rawPath; // without a `%` there is nothing to decode
  if (rawPath.includes('%')) {
    try {
      path = rawPath
        .split('/')
        .map((s) => decodeURIComponent(s).replace(/\//g, '%2F'))
        .join('/');
    } catch {
      throw badRequest('Invalid URL encoding');
    }
  }
  let query: Array<[string, string]>;
  try {
    query = rawQuery === '' ? [] : [...new URLSearchParams(rawQuery)];
  } catch {
    throw badRequest('Invalid query string');
  }
  return { path: path || '/', query };
}
