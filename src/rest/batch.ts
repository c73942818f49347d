import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Bundle, BundleEntry, OperationOutcome, Resource } from '@medplum/fhirtypes';
import { FORMAT_PARAMETERS, type FhirRequest, type FhirResult } from '../core/fhir-request.js';
import { isObject } from '../fhir/json.js';
import type { ResourceRepository } from '../core/repository.js';
import type { ResourceValidator } from '../core/validation.js';
import { resourceTypesIn } from '../fhir/validation/bindings.js';
import { FhirError, badRequest, internalError, preconditionFailed } from '../fhir/outcome.js';
import { conditionalMatches, conditionalQuery, ifNoneExistParams } from './conditional.js';
import { createResource } from './crud.js';
import { ResolvedReferences, referencesIn, resolveAhead, resolveConditionalReference, resolveConditionalReferences } from './conditional-references.js';
import { versionHeaders } from './headers.js';
import { fhirRoute, type FhirRoute } from './route.js';

type JsonObject = Record<string, unknown>;
type Route = (req: FhirRequest, route: FhirRoute) => Promise<FhirResult>;
/** The router, with the validator its interactions use (a transaction's answers from memory). */
type RouteWith = (validator: ResourceValidator) => Route;

/** FHIR processing order of a transaction (http.html#trules): DELETE, POST, PUT/PATCH, GET/HEAD. */
const ORDER: Record<string, number> = { DELETE: 0, POST: 1, PUT: 2, PATCH: 2, GET: 3, HEAD: 3 };

/** One entry's request, checked; its path split and classified once (route.ts). */
interface EntryRequest {
  index: number;
  /** The method as the entry gives it (FHIR's processing order); `route.method` is the one answered. */
  method: string;
  /** Path below the FHIR base, starting with `/`. */
  path: string;
  route: FhirRoute;
  /** The query without the format parameters. */
  query: Array<[string, string]>;
  type: string | undefined;
  fullUrl: string | undefined;
  resource: JsonObject | undefined;
  headers: Record<string, string | undefined>;
}

/**
 * POST [base] with a Bundle of type `batch` or `transaction` (FHIR R4 http.html#transaction):
 * - `transaction`: every entry in ONE database transaction (all or nothing), in FHIR order,
 *   `urn:uuid:` fullUrls and conditional references (`Type?search`) resolved inside resources;
 *   the first failing entry fails the whole Bundle with its index in the text.
 * - `batch`: entries run one by one, each on its own; a failure is that entry's OperationOutcome;
 *   conditional references are resolved as in a transaction, `urn:uuid:`s are not.
 * Each entry goes through the same interactions as a plain request (`route`).
 */
export async function bundleInteraction(
  req: FhirRequest,
  routeWith: RouteWith,
  limits: { maxEntries: number; timeoutMs?: (entries: number) => number | undefined },
  validator: ResourceValidator,
): Promise<FhirResult> {
  const { maxEntries } = limits;
  const body = req.body;
  if (body === undefined) throw badRequest('Request body is empty: expected a Bundle of type batch or transaction');
  if (!isObject(body) || body.resourceType !== 'Bundle') throw badRequest('Expected a Bundle of type batch or transaction');
  if (body.type !== 'batch' && body.type !== 'transaction') {
    throw badRequest(`Bundle type '${String(body.type)}' is not supported: expected batch or transaction`, 'Bundle.type');
  }
  if (body.entry !== undefined && !Array.isArray(body.entry)) throw badRequest('Bundle.entry must be an array', 'Bundle.entry');
  const rawEntries = (body.entry ?? []) as unknown[];
  if (rawEntries.length > maxEntries) {
    throw new FhirError(413, [
      { severity: 'error', code: 'too-costly', details: { text: `Bundle has ${rawEntries.length} entries; at most ${maxEntries} are allowed` } },
    ]);
  }
  const base = req.ctx.fhirBaseUrl;
  if (body.type === 'batch') {
    const entries: BundleEntry[] = [];
    const resolved = new ResolvedReferences();
    for (let i = 0; i < rawEntries.length; i++) {
      let written: string | undefined;
      try {
        const entry = parseEntry(rawEntries[i], i, base, false);
        written = entry.method === 'GET' ? undefined : entry.type;
        // Conditional references are resolved as in a transaction (FHIR R4 allows it in a
        // batch); `urn:uuid:`s are not: batch entries do not depend on each other.
        if (entry.resource && (entry.method === 'POST' || entry.method === 'PUT')) {
          entry.resource = await resolveConditionalReferences(req.ctx.repo, entry.resource, resolved);
        }
        entries.push(responseEntry(await routeWith(validator)(entryRequest(req, entry, req.ctx.repo), entry.route)));
      } catch (err) {
        if (!(err instanceof FhirError)) throw err;
        entries.push({ response: { status: statusLine(err.status), outcome: err.outcome } });
      } finally {
        resolved.written(written);
      }
    }
    return { status: 200, body: { resourceType: 'Bundle', type: 'batch-response', entry: entries } satisfies Bundle };
  }

  const parsed = rawEntries.map((raw, i) => {
    try {
      return parseEntry(raw, i, base, true);
    } catch (err) {
      throw prefixed(err, i);
    }
  });
  const fullUrls = new Set<string>();
  for (const e of parsed) {
    if (e.fullUrl === undefined) continue;
    if (fullUrls.has(e.fullUrl)) throw badRequest(`Bundle.entry[${e.index}]: duplicate fullUrl '${e.fullUrl}'`);
    fullUrls.add(e.fullUrl);
  }
  // Entries are validated inside the transaction: what validation needs is loaded first.
  const inTransaction = await validator.prepare(
    [...new Set(parsed.flatMap((e) => (e.type && (e.resource || e.method === 'PATCH') ? [e.type, ...resourceTypesIn(e.resource)] : [])))],
    parsed.flatMap((e) => (e.resource ? [e.resource] : [])),
  );
  const route = routeWith(inTransaction);
  const responses = await req.ctx.repo.transaction(async (repo) => {
    const out: BundleEntry[] = new Array<BundleEntry>(parsed.length);
    const targets = await resolveTargets(repo, parsed);
    const { ids } = targets;
    const resolved = new ResolvedReferences();
    const ordered = [...parsed].sort((a, b) => ORDER[a.method] - ORDER[b.method] || a.index - b.index);
    const written = new Set(parsed.flatMap((e) => (e.method !== 'GET' && e.method !== 'HEAD' && e.type ? [e.type] : [])));
    await resolveAhead(repo, ordered.flatMap((e) => (e.resource ? referencesIn(e.resource) : [])), written, resolved);
    for (const entry of ordered) {
      out[entry.index] = await atEntry(entry.index, async () => {
        const first = targets.sameAs.get(entry.index);
        // The same ifNoneExist as an earlier entry: that entry's resource, as a match (200).
        if (first !== undefined) return { ...out[first], response: { ...out[first].response, status: statusLine(200) } };
        if (entry.resource) entry.resource = (await resolveReferences(repo, entry.resource, ids, resolved)) as JsonObject;
        // What this entry writes may change what a later conditional reference matches.
        if (entry.method !== 'GET') resolved.written(entry.type);
        const match = targets.existing.get(entry.index);
        if (entry.method === 'POST' && match) {
          return { resource: match as unknown as BundleEntry['resource'], response: { status: statusLine(200), etag: versionHeaders(match).ETag } };
        }
        const entryReq = entryRequest(req, entry, repo);
        if (entry.method === 'POST' && entry.type && entry.route.segments.length === 1) {
          const id = targets.newIds.get(entry.index) ?? (entry.fullUrl !== undefined ? ids.get(entry.fullUrl)?.split('/')[1] : undefined);
          delete entryReq.headers['if-none-exist']; // already resolved under the lock, above
          return responseEntry(await createResource(entryReq, entry.type, inTransaction, { id }));
        }
        return responseEntry(await route(entryReq, entry.route));
      });
    }
    return out;
  }, { timeoutMs: limits.timeoutMs?.(parsed.length), batchCreates: true });
  return { status: 200, body: { resourceType: 'Bundle', type: 'transaction-response', entry: responses } satisfies Bundle };
}

/** Runs one entry's step; a FhirError is re-thrown with `Bundle.entry[i]: ` before each text. */
async function atEntry<T>(index: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw prefixed(err, index);
  }
}

function prefixed(err: unknown, index: number): unknown {
  if (!(err instanceof FhirError)) return err;
  const outcome: OperationOutcome = {
    ...err.outcome,
    issue: (err.outcome.issue ?? []).map((i) => ({ ...i, details: { ...i.details, text: `Bundle.entry[${index}]: ${i.details?.text ?? ''}` } })),
  };
  return new FhirError(err.status, outcome, err.headers);
}

function parseEntry(raw: unknown, index: number, base: string, transaction: boolean): EntryRequest {
  if (!isObject(raw)) throw badRequest('entry must be an object');
  const request = raw.request;
  if (!isObject(request)) throw badRequest('entry has no request', `Bundle.entry[${index}].request`);
  const method = request.method;
  if (typeof method !== 'string' || !(method in ORDER)) {
    throw badRequest(`entry request method '${String(method)}' is not supported`, `Bundle.entry[${index}].request.method`);
  }
  if (typeof request.url !== 'string' || request.url === '') throw badRequest('entry request has no url', `Bundle.entry[${index}].request.url`);
  let url = request.url;
  if (url.startsWith(`${base}/`)) url = url.slice(base.length + 1);
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) throw badRequest(`entry request url '${request.url}' is not below this server's base`);
  const q = url.indexOf('?');
  const path = `/${(q >= 0 ? url.slice(0, q) : url).replace(/^\/+/, '')}`;
  const query = q >= 0 ? [...new URLSearchParams(url.slice(q + 1))].filter(([k]) => !FORMAT_PARAMETERS.has(k)) : [];
  const route = fhirRoute(method, path);
  const { segments } = route;
  if (segments.length === 0) throw badRequest('a nested batch or transaction is not supported');
  if (transaction && segments.some((s) => s.startsWith('$'))) throw badRequest('operations are not supported in a transaction');
  let resource = raw.resource;
  if (resource !== undefined && !isObject(resource)) throw badRequest('entry resource must be an object', `Bundle.entry[${index}].resource`);
  if ((method === 'POST' || method === 'PUT') && resource === undefined) throw badRequest(`entry ${method} has no resource`);
  if (method === 'PATCH' && isObject(resource) && resource.resourceType === 'Binary') resource = binaryPatch(resource);
  const fullUrl = typeof raw.fullUrl === 'string' ? raw.fullUrl : undefined;
  const header = (name: string): string | undefined => {
    const value = request[name];
    return typeof value === 'string' ? value : undefined;
  };
  return {
    index,
    method,
    path,
    route,
    query,
    type: segments[0],
    fullUrl,
    resource: resource as JsonObject | undefined,
    headers: {
      'if-match': header('ifMatch'),
      'if-none-exist': header('ifNoneExist'),
      'if-none-match': header('ifNoneMatch'),
      'if-modified-since': header('ifModifiedSince'),
    },
  };
}

/** A JSON Patch carried as a Binary (FHIR's way of putting one in a Bundle). */
function binaryPatch(binary: JsonObject): JsonObject {
  try {
    return JSON.parse(Buffer.from(typeof binary.data === 'string' ? binary.data : '', 'base64').toString('utf8')) as JsonObject;
  } catch {
    throw badRequest('the Binary of a PATCH entry does not hold a JSON Patch');
  }
}

function entryRequest(outer: FhirRequest, entry: EntryRequest, repo: ResourceRepository): FhirRequest {
  return {
    method: entry.route.method,
    path: entry.path,
    query: entry.query,
    body: entry.resource,
    headers: { ...entry.headers, prefer: outer.headers['prefer'] },
    ctx: { ...outer.ctx, repo },
  };
}

/** What the conditional creates of a transaction resolved to, by entry index. */
interface Targets {
  /** `fullUrl` → `Type/id` it stands for. */
  ids: Map<string, string>;
  /** Entries whose `ifNoneExist` matched a stored resource: that resource. */
  existing: Map<number, Resource>;
  /** Entries whose `ifNoneExist` repeats an earlier entry's criteria: that entry's index. */
  sameAs: Map<number, number>;
  /** Ids of the creates whose `ifNoneExist` matched nothing. */
  newIds: Map<number, string>;
}

/**
 * What each POST/PUT entry stands for: a new id for a create, the match of an `ifNoneExist`
 * (searched under the conditional lock, in this transaction), the URL's id for a PUT; by
 * `fullUrl` (for the references that name it) and by entry. Entries whose `ifNoneExist` has the
 * same criteria (normalised, conditional.ts) are resolved once: the first of them is created
 * (or matched), the others refer to it (docs/rest.md#batch-and-transaction). Criteria may name
 * other entries' `urn:uuid:`s; they are resolved once those are, and a cycle among them is refused.
 */
async function resolveTargets(repo: ResourceRepository, entries: EntryRequest[]): Promise<Targets> {
  const targets: Targets = { ids: new Map(), existing: new Map(), sameAs: new Map(), newIds: new Map() };
  const { ids } = targets;
  const pending: EntryRequest[] = [];
  for (const e of entries) {
    if (!e.type) continue;
    const { segments } = e.route;
    if (e.method === 'POST' && segments.length === 1 && e.headers['if-none-exist']?.trim()) pending.push(e);
    else if (e.fullUrl === undefined) continue;
    else if (e.method === 'PUT' && segments.length === 2) ids.set(e.fullUrl, `${e.type}/${segments[1]}`);
    else if (e.method === 'POST') ids.set(e.fullUrl, `${e.type}/${randomUUID()}`);
  }
  /** Criteria already resolved (`Type?normalised query`) → the entries that carry them. */
  const resolved = new Map<string, EntryRequest[]>();
  while (pending.length > 0) {
    const ready = pending.findIndex((e) => urnsIn(e.headers['if-none-exist'] ?? '').every((u) => ids.has(u) || !pending.some((p) => p.fullUrl === u)));
    if (ready < 0) {
      const cycle = pending.map((e) => `Bundle.entry[${e.index}]`).join(', ');
      throw badRequest(`circular reference between the ifNoneExist criteria of ${cycle}`);
    }
    const [e] = pending.splice(ready, 1);
    await atEntry(e.index, async () => {
      const type = e.type as string;
      let criteria = e.headers['if-none-exist'] as string;
      for (const urn of urnsIn(criteria)) {
        const target = ids.get(urn);
        if (!target) throw badRequest(`unknown reference '${urn}' in ifNoneExist`);
        criteria = criteria.split(urn).join(target);
      }
      const query = conditionalQuery(type, ifNoneExistParams(type, criteria) ?? [], 'If-None-Exist');
      const key = `${type}?${new URLSearchParams(query.params).toString()}`;
      const same = resolved.get(key);
      if (same) {
        same.push(e);
        return;
      }
      resolved.set(key, [e]);
      const matches = await conditionalMatches(repo, query);
      if (matches.length > 1) throw preconditionFailed('Multiple matches');
      if (matches[0]) targets.existing.set(e.index, matches[0]);
      else targets.newIds.set(e.index, randomUUID());
    });
  }
  // The first entry (in Bundle order, the order creates run in) of each criteria stands for all.
  for (const group of resolved.values()) {
    const first = group.reduce((a, b) => (b.index < a.index ? b : a));
    const resolvedAt = group[0].index;
    const match = targets.existing.get(resolvedAt);
    const id = targets.newIds.get(resolvedAt);
    targets.existing.delete(resolvedAt);
    targets.newIds.delete(resolvedAt);
    if (match) targets.existing.set(first.index, match);
    if (id) targets.newIds.set(first.index, id);
    for (const e of group) {
      if (e.fullUrl !== undefined) ids.set(e.fullUrl, `${e.type as string}/${match?.id ?? id}`);
      if (e !== first) targets.sameAs.set(e.index, first.index);
    }
  }
  return targets;
}

function urnsIn(text: string): string[] {
  return text.match(/urn:uuid:[0-9a-fA-F-]{36}/g) ?? [];
}

/**
 * Rewrites every `reference` inside a resource: a fullUrl of the Bundle → `Type/id`; an unknown
 * `urn:uuid:` → 400; `Type?search` (a conditional reference) → its single match (400 otherwise).
 * The references are resolved in document order (the first that fails is the one reported),
 * then the resource is copied with them replaced.
 */
async function resolveReferences(repo: ResourceRepository, value: unknown, ids: Map<string, string>, resolved: ResolvedReferences): Promise<unknown> {
  const targets = new Map<string, string>();
  let changed = false;
  // One at a time: the lookups share the transaction's connection (no concurrent queries on it).
  for (const reference of referencesIn(value)) {
    if (targets.has(reference)) continue;
    const target = await resolveReference(repo, reference, ids, resolved);
    targets.set(reference, target);
    changed ||= target !== reference;
  }
  return changed ? replaceReferences(value, targets) : value;
}

function replaceReferences(value: unknown, targets: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => replaceReferences(v, targets));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const key in value) {
    const v = value[key];
    out[key] = key === 'reference' && typeof v === 'string' ? (targets.get(v) ?? v) : typeof v === 'object' && v !== null ? replaceReferences(v, targets) : v;
  }
  return out;
}

async function resolveReference(repo: ResourceRepository, reference: string, ids: Map<string, string>, resolved: ResolvedReferences): Promise<string> {
  const mapped = ids.get(reference);
  if (mapped) return mapped;
  if (reference.startsWith('urn:uuid:') || reference.startsWith('urn:oid:')) throw badRequest(`unknown reference '${reference}': no entry has this fullUrl`);
  return resolveConditionalReference(repo, reference, resolved);
}

/** A transaction/batch response entry from an interaction's result. */
function responseEntry(result: FhirResult): BundleEntry {
  const headers = result.headers ?? {};
  const response: NonNullable<BundleEntry['response']> = { status: statusLine(result.status) };
  if (headers['Location'] ?? headers['Content-Location']) response.location = headers['Location'] ?? headers['Content-Location'];
  if (headers['ETag']) response.etag = headers['ETag'];
  if (headers['Last-Modified']) response.lastModified = new Date(headers['Last-Modified']).toISOString();
  const body = result.body as JsonObject | undefined;
  if (body?.resourceType === 'OperationOutcome') return { response: { ...response, outcome: body as unknown as OperationOutcome } };
  return body ? { resource: body as unknown as BundleEntry['resource'], response } : { response };
}

function statusLine(status: number): string {
  if (status >= 500) throw internalError();
  return `${status} ${STATUS_CODES[status] ?? ''}`.trim();
}

