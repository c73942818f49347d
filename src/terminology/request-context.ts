import { createHash } from 'node:crypto';
import type { CodeSystem, Resource } from '@medplum/fhirtypes';
import type { RequestContext } from '../core/context.js';
import { FhirError, badRequest } from '../fhir/outcome.js';
import type { Database } from '../core/database.js';
import { stableStringify } from '../storage/stable-stringify.js';
import { ClosureTooLarge } from './closure.js';
import { indexFromRows, setRequestIndex, type CodeSystemIndex } from './code-system-index.js';
import { codeSystemRows } from './code-system-rows.js';
import { removeCodeSystemIndex } from './code-system-store.js';
import { terminologyCache } from './index-cache.js';
import { txIssueOutcome } from './issues.js';
import { msg } from './messages.js';
import { resolveCodeSystem } from './resolve.js';
import type { CodeSystemInfo, TermContext, TerminologyEnv } from './types.js';
import { parseVersionRules } from './versions.js';

/**
 * The engine's view of one request, including resources supplied inline (`tx-resource`).
 *
 * `useSupplement` canonicals are resolved here (404 when unknown or not a supplement).
 *
 * Inline CodeSystems get an in-memory index like the one of a stored code system
 * (docs/terminology.md#request-supplied-resources) and are never persisted: the one engine
 * answers for both, and nobody else sees them.
 */
export async function termContext(env: TerminologyEnv, ctx: RequestContext, input: object): Promise<TermContext> {
  rejectNul(input);
  // Every change committed before this request has reached the caches (PostgreSQL: one round
  // trip on the listening connection, shared by concurrent requests), so none answers from a
  // version another node already replaced (docs/terminology.md#in-memory-index). When the
  // connection is lost the caches keep nothing anyway; when it does not answer within the
  // waiting limit, 503 (docs/errors.md#database-limits).
  await env.db.caughtUp(ctx.since).catch((err: unknown) => {
    if (err instanceof FhirError) throw err;
  });
  const txResources = (input as { 'tx-resource'?: unknown })['tx-resource'];
  const tc: TermContext = {
    db: env.db,
    repo: ctx.repo,
    env,
    log: ctx.log,
    inlineCodeSystems: [],
    inlineValueSets: [],
    supplements: [],
    versionRules: parseVersionRules(input as Record<string, unknown>),
    memo: new Map(),
  };
  for (const r of Array.isArray(txResources) ? (txResources as Resource[]) : []) {
    if (r?.resourceType === 'ValueSet') tc.inlineValueSets.push(r);
    else if (r?.resourceType === 'CodeSystem' && r.url) {
      const { info, index } = inlineCodeSystem(env, r);
      tc.inlineCodeSystems.push(info);
      setRequestIndex(tc, info.key, index);
    }
  }
  const wanted = (input as { useSupplement?: unknown }).useSupplement;
  for (const url of Array.isArray(wanted) ? (wanted as string[]) : []) await useSupplement(tc, url);
  return tc;
}

const VALUESET_SUPPLEMENT = 'http://hl7.org/fhir/StructureDefinition/valueset-supplement';

/**
 * Makes a supplement apply to the request (its designations and properties): the
 * `useSupplement` parameter, or a value set's `valueset-supplement` extension. 404 when the
 * canonical names no supplement the caller can see.
 */
export async function useSupplement(tc: TermContext, url: string): Promise<void> {
  const supplement = await resolveCodeSystem(tc, url);
  if (!supplement || supplement.content !== 'supplement') {
    throw new FhirError(404, txIssueOutcome([{ severity: 'error', code: 'not-found', type: 'not-found', id: 'VALUESET_SUPPLEMENT_MISSING', text: msg.supplementNotFound(url) }]));
  }
  if (!tc.supplements.some((s) => s.key === supplement.key)) tc.supplements.push(supplement);
}

/** The supplements a value set asks for with the `valueset-supplement` extension (docs/terminology.md#expand). */
export async function useValueSetSupplements(tc: TermContext, vs: { extension?: Array<{ url?: string; valueCanonical?: string; valueUri?: string }> }): Promise<void> {
  for (const e of vs.extension ?? []) {
    const url = e.url === VALUESET_SUPPLEMENT ? (e.valueCanonical ?? e.valueUri) : undefined;
    if (url) await useSupplement(tc, url);
  }
}

/**
 * PostgreSQL text cannot hold NUL: a NUL anywhere in the input is the client's mistake (400),
 * not a database error (500).
 */
function rejectNul(value: unknown, depth = 0): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw badRequest('Invalid value: text contains a NUL character');
  } else if (value && typeof value === 'object' && depth < 64) {
    for (const v of Object.values(value)) rejectNul(v, depth + 1);
  }
}

/**
 * The in-memory index of a request-supplied CodeSystem (never written to the database): built
 * from the same rows a stored one is indexed with, and kept in the index cache under its content
 * hash, so a client that sends the same resource with every request pays for building it once.
 */
function inlineCodeSystem(env: TerminologyEnv, cs: CodeSystem): { info: CodeSystemInfo; index: CodeSystemIndex } {
  const hash = createHash('sha256').update(stableStringify(cs)).digest('hex').slice(0, 40);
  const cache = terminologyCache(env.db);
  const key = cache.inlineKey(hash);
  let index = cache.peek(key);
  if (!index) {
    try {
      index = indexFromRows(codeSystemRows(cs));
    } catch (err) {
      if (err instanceof ClosureTooLarge) throw badRequest('CodeSystem hierarchy is too large to index', 'CodeSystem.concept');
      throw err;
    }
    cache.keep(key, `tx:${hash}`, index);
  }
  const info: CodeSystemInfo & { inline: true } = {
    key,
    resourceId: `tx:${hash}`,
    projectId: undefined,
    url: cs.url as string,
    version: cs.version,
    lastUpdated: new Date().toISOString(),
    content: cs.content ?? 'complete',
    caseSensitive: cs.caseSensitive !== false,
    hierarchyMeaning: cs.hierarchyMeaning,
    supplements: cs.supplements,
    language: cs.language,
    name: cs.name,
    title: cs.title,
    propertyDefs: cs.property ?? [],
    conceptCount: index.maxId,
    inline: true,
  };
  return { info, index };
}

/**
 * Removes request-scoped index rows, which earlier versions wrote for `tx-resource` code systems
 * (run periodically; nothing writes them any more).
 */
export async function pruneInlineCodeSystems(db: Database): Promise<number> {
  const old = await db.query<{ resource_id: string }>(
    "SELECT resource_id FROM tx_code_system WHERE scope IS NOT NULL AND last_updated < now() - interval '1 hour'",
  );
  for (const { resource_id } of old.rows) await db.transaction((tx) => removeCodeSystemIndex(tx, resource_id));
  return old.rows.length;
}

/**
 * The request's Accept-Language header, when the request context carries headers (the
 * framework passes none today; `displayLanguage` is the supported way to ask for a language).
 */
export function acceptLanguage(ctx: RequestContext): string | undefined {
  return ctx.acceptLanguage;
}
