import { FORMAT_PARAMETERS } from '../core/fhir-request.js';
import { badRequest } from '../fhir/outcome.js';
import { fhirRoute, type FhirRoute } from '../rest/route.js';

/** A parsed request body and the encoding it came in. */
export interface ParsedBody {
  /**
   * `json-patch`: an `application/json-patch+json` body (accepted by FHIR PATCH only);
   * `stream`: the unread request stream of a route with `body: 'stream'`;
   * `raw`: Binary content (a `RawBody`, docs/rest.md#binary).
   */
  kind: 'json' | 'form' | 'json-patch' | 'stream' | 'raw';
  contentType: string;
  value: unknown;
}

/** A FHIR request as the HTTP adapter reads it, once per request. */
export interface FhirRequestInfo {
  path: string;
  /** The query without the format parameters. */
  query: Array<[string, string]>;
  route: FhirRoute;
  /** The first `_format` ('' when empty), and whether `_pretty=true` was given. */
  format: string | undefined;
  pretty: boolean;
}

/** Request lines of GETs and HEADs read lately, by method then URL (see `fhirRequestInfo`). */
const recent = new Map<string, Map<string, FhirRequestInfo>>([
  ['GET', new Map()],
  ['HEAD', new Map()],
]);
/** Most request lines kept per method (the oldest half goes when full), and the longest URL kept. */
const RECENT_LIMIT = 2048;
const RECENT_URL_LENGTH = 1024;

/**
 * A FHIR request line read once: the path classified into its route (HEAD answered as GET),
 * and `_format`/`_pretty` taken out of the query (docs/errors.md#content-types).
 *
 * A GET or HEAD whose URL was read lately gets the same reading again — the same, frozen object:
 * what it holds follows from the method and URL alone, and a client asking the same question
 * again (a `$lookup`, a read) then pays one look-up instead of splitting, decoding and
 * classifying its URL. Frozen, so no layer can change what the next request gets.
 */
export function fhirRequestInfo(method: string, url: string, prefix: string): FhirRequestInfo {
  const kept = recent.get(method);
  if (kept === undefined || url.length > RECENT_URL_LENGTH) return readRequestLine(method, url, prefix);
  let info = kept.get(url);
  if (info === undefined) {
    info = freezeInfo(readRequestLine(method, url, prefix));
    if (kept.size >= RECENT_LIMIT) forgetOldest(kept);
    kept.set(url, info);
  }
  return info;
}

function freezeInfo(info: FhirRequestInfo): FhirRequestInfo {
  for (const pair of info.query) Object.freeze(pair);
  Object.freeze(info.query);
  Object.freeze(info.route.segments);
  Object.freeze(info.route.target);
  Object.freeze(info.route);
  return Object.freeze(info);
}

/** Drops the older half of a Map (its insertion order). */
function forgetOldest(map: Map<string, unknown>): void {
  let drop = map.size / 2;
  for (const key of map.keys()) {
    if (drop-- <= 0) break;
    map.delete(key);
  }
}

function readRequestLine(method: string, url: string, prefix: string): FhirRequestInfo {
  const { path, query: all } = requestInfo(url, prefix);
  const query: Array<[string, string]> = [];
  let format: string | undefined;
  let pretty = false;
  for (const pair of all) {
    if (!FORMAT_PARAMETERS.has(pair[0])) query.push(pair);
    else if (pair[0] === '_format') format ??= pair[1];
    else if (pair[1] === 'true') pretty = true;
  }
  return { path, query, route: fhirRoute(method, path), format, pretty };
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
