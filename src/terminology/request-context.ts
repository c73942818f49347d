import { createHash } from 'node:crypto';
import type { CodeSystem, Resource } from '@medplum/fhirtypes';
import type { RequestContext } from '../core/context.js';
import { badRequest, notFound } from '../fhir/outcome.js';
import type { Database, Queryable } from '../core/database.js';
import { stableStringify } from '../storage/stable-stringify.js';
import { indexCodeSystem, removeCodeSystemIndex } from './code-system-store.js';
import { msg } from './messages.js';
import { codeSystemInfoOf, resolveCodeSystem } from './resolve.js';
import type { CodeSystemInfo, TermContext, TerminologyEnv } from './types.js';
import { parseVersionRules } from './versions.js';

/**
 * The engine's view of one request, including resources supplied inline (`tx-resource`).
 *
 * `useSupplement` canonicals are resolved here (404 when unknown or not a supplement).
 *
 * Inline CodeSystems are indexed like stored ones, under a request scope keyed by a hash of
 * their content: the one engine answers for both, and a client that sends the same resources
 * with every request (the HL7 test runner does) pays for indexing once. Scoped rows are never
 * visible to canonical resolution of other requests and are pruned when unused for an hour.
 */
export async function termContext(env: TerminologyEnv, ctx: RequestContext, input: object): Promise<TermContext> {
  rejectNul(input);
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
    else if (r?.resourceType === 'CodeSystem' && (r).url) tc.inlineCodeSystems.push(await inlineCodeSystem(env.db, r));
  }
  const wanted = (input as { useSupplement?: unknown }).useSupplement;
  for (const url of Array.isArray(wanted) ? (wanted as string[]) : []) {
    const supplement = await resolveCodeSystem(tc, url);
    if (!supplement || supplement.content !== 'supplement') throw notFound(msg.supplementNotFound(url));
    tc.supplements.push(supplement);
  }
  return tc;
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

/** Indexes (or reuses the index of) a request-supplied CodeSystem. */
async function inlineCodeSystem(db: Database, cs: CodeSystem): Promise<CodeSystemInfo> {
  const resourceId = `tx:${createHash('sha256').update(stableStringify(cs)).digest('hex').slice(0, 40)}`;
  const existing = await byResourceId(db, resourceId);
  if (existing) {
    // Touch at most every ten minutes, so a hot resource is not pruned and not rewritten per request.
    await db.query("UPDATE tx_code_system SET last_updated = now() WHERE cs_key = $1 AND last_updated < now() - interval '10 minutes'", [
      existing.key,
    ]);
    return { ...existing, inline: true } as CodeSystemInfo;
  }
  try {
    await db.transaction((tx) =>
      indexCodeSystem(tx, cs, { resourceId, projectId: undefined, scope: 'tx-resource', lastUpdated: new Date().toISOString() }),
    );
  } catch (err) {
    // Another request indexed the same content at the same moment (unique resource_id).
    if ((err as { code?: string }).code !== '23505') throw err;
  }
  const info = await byResourceId(db, resourceId);
  if (!info) throw new Error('request-scoped code system vanished');
  return { ...info, inline: true } as CodeSystemInfo;
}

async function byResourceId(db: Queryable, resourceId: string): Promise<CodeSystemInfo | undefined> {
  const res = await db.query<Parameters<typeof codeSystemInfoOf>[0]>('SELECT * FROM tx_code_system r WHERE r.resource_id = $1', [resourceId]);
  return res.rows[0] ? codeSystemInfoOf(res.rows[0]) : undefined;
}

/** Removes request-scoped indexes unused for an hour (run periodically). */
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
